"""Ensembles of checkpoints as one model: the weighted sum of the members' vectors.

``ensemble:A+B`` sums the vectors of A and B (EDFSE's and JTCSE's twin-tower inference, §IV.D);
``ensemble:0.3*A+0.7*B`` weights them (JTCSE's "+UC": ``ensemble_UC.py`` gives 0.3 to the twin and
0.7 to the InfoCSE checkpoint). A folder with an ``ensemble.json`` (what ``embench train --method
jtcse`` exports: ``tower-1/`` + ``tower-2/``, [CLS] pooling, weights 1 and 1) loads the same way, and
may itself be a member (``ensemble:0.3*runs/jtcse/best+0.7*B``).

Members may differ in tokenizer, pooling and size: each is its own encoder, with its own
settings (a manifest's member may set ``normalize``: unit length before the sum; ``--normalize`` makes the sum unit
length). Each member's vectors come through ``embed_member`` (by default the member's own
``encode_batch``); the evaluation API routes them through the engine and its cache
(:meth:`EnsembleEncoder.use_engines`), so every member is encoded once per text, and a member shared
by two ensembles (or run alone) is read back from the cache.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..core.atomic import replace_folder, write_json
from ..core.errors import EmbenchError
from ..core.hashing import stable_hash
from ..encoding.st_face import SentenceEncode, text_list
from ..encoding.vector_axes import l2_normalise
from .layer_stack import transformer_layers
from .layernorm import remove_layernorms

PREFIX = "ensemble:"
MANIFEST = "ensemble.json"
_WEIGHTED = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*\*\s*(.+?)\s*$")


def is_ensemble(name: Any) -> bool:
    """``ensemble:...`` or a folder holding ``ensemble.json``."""
    if not isinstance(name, (str, Path)):
        return False
    s = str(name)
    return s.startswith(PREFIX) or (Path(s).expanduser() / MANIFEST).is_file()


def parse_spec(spec: str) -> list[tuple[float, str]]:
    """(weight, member) of ``ensemble:A+B`` or ``ensemble:w1*A+w2*B``: weights for all members or none."""
    body = spec[len(PREFIX):] if spec.startswith(PREFIX) else spec
    parts = [p.strip() for p in _members(body.split("+"))]
    if len(parts) < 2 or not all(parts):
        raise EmbenchError(f"--model {spec!r}: an ensemble needs two or more members, 'ensemble:A+B' or "
                           "'ensemble:0.3*A+0.7*B'")
    found = [_WEIGHTED.match(p) for p in parts]
    weighted = [m is not None for m in found]
    if any(weighted) and not all(weighted):
        missing = [p for p, w in zip(parts, weighted, strict=True) if not w]
        raise EmbenchError(f"--model {spec!r}: {sum(weighted)} weight(s) for {len(parts)} members; give one weight per "
                           f"member or none (no weight: {', '.join(missing)})")
    if not any(weighted):
        return [(1.0, p) for p in parts]
    return [(float(m.group(1)), m.group(2)) for m in found if m is not None]


_EXPONENT_CUT = re.compile(r"^\s*[-+]?(?:\d+\.?\d*|\.\d+)[eE]$")  # "1e" of "1e+0*A": the '+' is the exponent's


def _members(pieces: list[str]) -> list[str]:
    """The members of ``A+B`` split on '+': a '+' of a weight's exponent (``1e+0*A``) joins its pieces, and pieces
    that together name an existing path (``runs/a+b``) are one member, the longest such; any other '+' separates
    members (hub ids have none)."""
    joined: list[str] = []
    for piece in pieces:
        if joined and _EXPONENT_CUT.match(joined[-1]):
            joined[-1] += "+" + piece
        else:
            joined.append(piece)
    out, i = [], 0
    while i < len(joined):
        j = next((j for j in range(len(joined), i + 1, -1) if _names_path("+".join(joined[i:j]))), i + 1)
        out.append("+".join(joined[i:j]))
        i = j
    return out


def _names_path(token: str) -> bool:
    m = _WEIGHTED.match(token)
    try:
        return Path((m.group(2) if m else token).strip()).expanduser().exists()
    except OSError:  # a name too long for a path names none
        return False


def read_manifest(folder: Path) -> list[dict[str, Any]]:
    """The members of an ensemble folder, their paths made absolute (relative to the folder)."""
    path = folder / MANIFEST
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        members = raw["members"]
        if not isinstance(members, list) or len(members) < 2:
            raise ValueError("'members' must list two or more models")
        out = []
        for i, m in enumerate(members):
            if not isinstance(m, dict) or "model" not in m:
                raise ValueError(f"member {i} has no 'model'")
            p = Path(m["model"])
            out.append({**m, "model": str(p if p.is_absolute() else folder / p), "weight": float(m.get("weight", 1.0))})
        return out
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise EmbenchError(f"{path}: not a valid ensemble manifest ({e})") from None


def write_ensemble(folder: Path, members: list[dict[str, Any]], meta: dict[str, Any],
                   write_members: Callable[[Path], None]) -> Path:
    """Write an ensemble folder atomically: ``write_members(tmp)`` puts the members under it, then the manifest."""
    folder = Path(folder)
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    write_members(tmp)
    write_json(tmp / MANIFEST, {"members": members, "meta": meta})
    return replace_folder(tmp, folder)


class EnsembleEncoder(SentenceEncode):
    """The weighted sum of member encoders' vectors (the :class:`~embench.encoding.encoder_interface.Encoder` interface)."""

    def __init__(self, members: list[Any], weights: list[float], name: str, source: str, normalize: bool = False):
        if len(members) != len(weights):
            raise EmbenchError(f"{name}: {len(weights)} weight(s) for {len(members)} members")
        self.members, self.weights, self.name, self.source = list(members), [float(w) for w in weights], name, source
        self.normalize = bool(normalize)  # --normalize: the sum made unit length (the members' settings are their own)
        self.embed_member: list[Callable[[list[str]], np.ndarray]] = [m.encode_batch for m in self.members]

    def use_engines(self, engine_for: Callable[[Any], Any]) -> None:
        """Route each member through ``engine_for(member).embed`` (the engine: dedup and disk cache)."""
        self.embed_member = [engine_for(m).embed for m in self.members]

    @property
    def pooling(self) -> str:
        return "ensemble"

    def token_lengths(self, texts: list[str]) -> np.ndarray:
        """The longest of the members' token lengths (the engine batches by it)."""
        return np.max(np.stack([m.token_lengths(texts) for m in self.members]), axis=0)

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        texts = text_list(texts, "encode_batch()")  # one text is a batch of one, not of its letters
        # no texts: each member's own (0, dim) rows, since an engine has no width to give an empty batch
        embed = self.embed_member if len(texts) else [m.encode_batch for m in self.members]
        vecs = [np.asarray(f(texts), dtype=np.float32) for f in embed]
        dims = {v.shape[1] for v in vecs}
        if len(dims) > 1:
            raise EmbenchError(f"{self.name}: the members' vectors have different sizes "
                               f"({', '.join(f'{m.name}: {v.shape[1]}' for m, v in zip(self.members, vecs, strict=True))}); "
                               "an ensemble sums vectors, so they must have one size")
        total = sum(w * v for w, v in zip(self.weights, vecs, strict=True)).astype(np.float32)
        return l2_normalise(total) if self.normalize else total

    def cache_key(self) -> str:
        key: dict[str, Any] = {"ensemble": [[w, m.cache_key()] for w, m in zip(self.weights, self.members, strict=True)]}
        if self.normalize:  # other vectors; without it the key stays what it was (caches of plain sums still serve)
            key["normalize"] = True
        return stable_hash(key, 24)

    def describe(self) -> dict[str, Any]:
        parts = [m.describe() for m in self.members]
        same = {k: parts[0].get(k) for k in ("dtype", "device", "max_length") if len({str(p.get(k)) for p in parts}) == 1}
        return {"name": self.name, "source": self.source, "revision": None, "fingerprint": self.cache_key()[:16],
                "pooling": "ensemble", "layer": None, "normalize": self.normalize, "lowercase": False, "prompt": "", **same,
                "members": [{"weight": w, **p} for w, p in zip(self.weights, parts, strict=True)]}


def load_ensemble(spec: str | Path, load_member: Callable[..., Any], **options: Any) -> EnsembleEncoder:
    """``ensemble:...`` or an ensemble folder as an :class:`EnsembleEncoder`; ``options`` (pooling,
    max_length, dtype, device, ...) given explicitly apply to every member, over the manifest's; ``normalize`` makes
    the weighted sum unit length (the model's output, as for one checkpoint), not each member's vectors."""
    s = str(spec)
    if s.startswith(PREFIX):
        specs = [{"model": m, "weight": w} for w, m in parse_spec(s)]
        source, display = s, s
    else:
        folder = Path(s).expanduser().resolve()
        specs, source, display = read_manifest(folder), str(folder), s
    display = options.pop("name", None) or display
    normalize = bool(options.pop("normalize", None))  # of the sum, not of each member (a manifest may set a member's)
    for bad in ("tokenizer", "fingerprint", "layer"):
        if options.get(bad) is not None:
            raise EmbenchError(f"{display}: {bad!r} applies to one model, not to an ensemble's members")
        options.pop(bad, None)
    members = []
    for spec in specs:
        opts = {"pooling": spec.get("pooling"), "normalize": spec.get("normalize"), **{k: v for k, v in options.items() if v is not None}}
        member = load_member(spec["model"], **{k: v for k, v in opts.items() if v is not None})
        if spec.get("remove_layernorm"):
            _without_layernorms(member, int(spec["remove_layernorm"]))
        members.append(member)
    return EnsembleEncoder(members, [float(sp["weight"]) for sp in specs], display, source, normalize)


def _without_layernorms(member: Any, last: int) -> None:
    """Remove the LayerNorms of the member's last layers when its weights load (Fig. 8 runs' exports)."""
    load = member._load

    def patched() -> tuple[Any, Any]:
        model, tok = load()
        remove_layernorms(transformer_layers(model), last)
        return model, tok

    member._load = patched
    member.settings.extra["remove_layernorm"] = last  # part of the cache key: other vectors than the checkpoint's
