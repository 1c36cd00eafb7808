"""What every analysis reads: models (as encoders and engines), STS-B, and where results go.

Vectors always come through :class:`~embench.encoding.engine.Engine`, so analyses share the embedding
cache with ``embench run``; hidden states and attentions come from the encoder itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core import atomic
from ..core.errors import EmbenchError
from ..data.root import DataRoot
from ..encoding.cache import default_cache_dir
from ..encoding.engine import Engine, embed_views, fill_views
from ..models.devices import prefill_views
from ..models.encoder import HFEncoder
from ..models.loader import load_model

MODEL_OPTIONS = ("pooling", "max_length", "dtype", "device", "normalize", "tokenizer", "prompt", "bidirectional_last",
                 "bidirectional_mode", "adapter", "batch_tokens", "compile", "cuda_graphs", "unpadded", "revision",
                 "prompt_name")


@dataclass
class ModelRef:
    """A model named on the command line, with the label its figures show and its load options."""

    spec: Any  # name, alias, folder, or an HFEncoder / nn.Module
    label: str
    options: dict[str, Any] = field(default_factory=dict)
    _encoders: dict[Any, HFEncoder] = field(default_factory=dict, repr=False)

    def encoder(self, layer: int | None = None, **overrides: Any) -> HFEncoder:
        """The encoder pooling ``layer`` (None = the last), made once per (layer, overrides).

        Another layer or pooling is a view of the model loaded once (:meth:`HFEncoder.view`), so
        several of them can be served by one forward pass (:meth:`Context.embed_views`); other
        overrides (maximum length, dtype, ...) load the model with those settings."""
        key = (layer, tuple(sorted(overrides.items())))
        if key not in self._encoders:
            view_only = set(overrides) <= {"pooling", "final_norm", "normalize"}
            if (layer is not None or overrides) and view_only and hasattr(self.encoder(), "view"):
                self._encoders[key] = self.encoder().view(layer, overrides.get("pooling"), final_norm=bool(overrides.get("final_norm")),
                                                          normalize=overrides.get("normalize"))
            elif isinstance(self.spec, HFEncoder) and layer is None and not overrides:
                self._encoders[key] = self.spec
            else:
                spec = self.spec.model if isinstance(self.spec, HFEncoder) else self.spec
                opts = {**self.options, **overrides}
                if isinstance(self.spec, HFEncoder):
                    opts.setdefault("tokenizer", self.spec.tokenizer)
                    opts.setdefault("pooling", self.spec.pooling)
                self._encoders[key] = load_model(spec, layer=layer, name=self.label, **opts)
        return self._encoders[key]

    def unnormalised(self, layer: int | None = None, **overrides: Any) -> HFEncoder:
        """The encoder for the cropping paper's measures (kNN, its per-layer curves, the accuracy on t-SNE maps):
        "Euclidean distance and non-normalized embeddings" (§3.3.1; its Table S3 gives raw Euclidean and cosine
        apart, 37.4 against 39.6, which unit vectors could not). A model whose pipeline ends in an L2
        normalisation (all-MiniLM-L6-v2, all-mpnet-base-v2) is read before it, from the same forward pass, unless
        ``normalize`` was given (``--normalize``: unit vectors, the cosine-equivalent reading; ``--no-normalize``)."""
        enc = self.encoder(layer, **overrides)
        if self.options.get("normalize") is None and hasattr(enc, "view") and enc.settings.normalize:
            return self.encoder(layer, **overrides, normalize=False)
        return enc

    def made(self) -> list[HFEncoder]:
        """Every encoder this reference has made so far (the model as first loaded, then its views), for the
        run's provenance; none loads here."""
        return list({id(e): e for e in self._encoders.values()}.values())


def is_normalised(encoder: Any) -> bool | None:
    """Whether ``encoder`` L2-normalises its vectors (None: an object embench does not configure)."""
    settings = getattr(encoder, "settings", None)
    return bool(settings.normalize) if settings is not None else None


@dataclass
class Context:
    """Settings shared by every model of one analysis run."""

    root: DataRoot
    cache_dir: Path | None
    batch_size: int | None = None
    progress: bool = False
    devices: list[str] = field(default_factory=list)  # several: passes are split over one process per device
    _engines: dict[int, Engine] = field(default_factory=dict, repr=False)

    def engine(self, encoder: HFEncoder) -> Engine:
        """One engine per encoder object, so repeated requests reuse its in-memory vectors."""
        if id(encoder) not in self._engines:
            self._engines[id(encoder)] = Engine(encoder, batch_size=self.batch_size, cache_dir=self.cache_dir, progress=self.progress)
            if hasattr(encoder, "use_engines"):  # an ensemble: each member once through its own engine
                encoder.use_engines(self.engine)
        return self._engines[id(encoder)]

    def embed(self, encoder: HFEncoder, texts: list[str]) -> np.ndarray:
        self._split([encoder], texts)
        return self.engine(encoder).embed(texts)

    def embed_views(self, encoders: list[HFEncoder], texts: list[str]) -> list[np.ndarray]:
        """The vectors of ``texts`` under each of ``encoders`` (views of one model), one forward pass per batch."""
        self._split(encoders, texts)
        return embed_views([self.engine(e) for e in encoders], texts)

    def fill_views(self, encoders: list[HFEncoder], texts: list[str]) -> None:
        """:meth:`embed_views` without the arrays: each view's vectors wait in its engine's memory, for
        :meth:`embed` to read one view at a time."""
        self._split(encoders, texts)
        fill_views([self.engine(e) for e in encoders], texts)

    def _split(self, encoders: list[HFEncoder], texts: list[str]) -> None:
        """With several devices, the texts not yet cached are encoded by one process per device first."""
        if getattr(encoders[0], "load_spec", None) is not None:  # an ensemble or an object encodes here
            prefill_views([self.engine(e) for e in encoders], texts, self.devices)

    def release(self, encoder: HFEncoder) -> None:
        """Free the vectors this run holds for ``encoder`` (the cache keeps what it was given)."""
        if id(encoder) in self._engines:
            self._engines[id(encoder)].release()


def make_context(data: str | Path | DataRoot | None = None, cache_dir: str | Path | None = None, use_cache: bool = True,
                 batch_size: int | None = None, progress: bool = False, devices: list[str] | None = None) -> Context:
    root = data if isinstance(data, DataRoot) else DataRoot.resolve(data)
    cache = (Path(cache_dir) if cache_dir is not None else default_cache_dir()) if use_cache else None
    return Context(root, cache, batch_size, progress, list(devices or []))


def model_refs(models, labels: list[str] | None = None, **options: Any) -> list[ModelRef]:
    """ModelRefs for names/folders/encoders; labels default to the name or the folder's name."""
    if isinstance(models, (str, Path, HFEncoder)) or not isinstance(models, (list, tuple)):
        models = [models]
    if not models:
        raise EmbenchError("no model given: pass at least one --model")
    if labels and len(labels) != len(models):
        raise EmbenchError(f"--label was given {len(labels)} time(s) for {len(models)} --model(s); give one per model or none")
    opts = {k: v for k, v in options.items() if v is not None and k in MODEL_OPTIONS}
    refs, seen = [], set()
    for i, m in enumerate(models):
        label = labels[i] if labels else default_label(m)
        base, n = label, 2
        while label in seen:
            label, n = f"{base} ({n})", n + 1
        seen.add(label)
        refs.append(ModelRef(m, label, dict(opts)))
    return refs


def expand_ensembles(refs: list[ModelRef]) -> tuple[list[tuple[str, HFEncoder]], dict[str, list[str]]]:
    """(label, encoder) of every model, an ensemble's members one by one (labelled ``ENSEMBLE [member]``),
    and {ensemble label: its members' labels}: analyses of model internals read each member."""
    out: list[tuple[str, HFEncoder]] = []
    groups: dict[str, list[str]] = {}
    for ref in refs:
        enc = ref.encoder()
        members = getattr(enc, "members", None)
        if members is None:
            out.append((ref.label, enc))
            continue
        labels = [f"{ref.label} [{Path(m.name).name or m.name}]" for m in members]
        out += list(zip(labels, members, strict=True))
        groups[ref.label] = labels
    return out, groups


def default_label(model: Any) -> str:
    if isinstance(model, HFEncoder):
        return model.name
    if isinstance(model, (str, Path)):
        p = Path(model)
        return p.name if p.exists() else str(model)
    return type(model).__name__


def stsb(root: DataRoot, split: str = "test", text: str = "senteval"):
    """STS-B pairs of one split (a PairGroup: left, right, gold), as the STS task reads them."""
    from ..tasks import TASKS

    if split not in ("train", "dev", "test"):
        raise EmbenchError(f"invalid STS-B split {split!r}; choose train, dev or test")
    if text not in ("senteval", "raw"):
        raise EmbenchError(f"invalid text {text!r}; choose senteval or raw")
    group, _ = TASKS.get("STSBenchmark").read(root, split, text)
    return group


def unique(texts: list[str]) -> list[str]:
    """Texts without repeats, in first-seen order."""
    return list(dict.fromkeys(texts))


def checkpoint_series(path: Any) -> list[tuple[str, Path]] | None:
    """The checkpoints of a training run, when ``path`` is a folder of checkpoint folders.

    A checkpoint folder holds ``config.json`` or ``modules.json``; they are ordered by the last
    number in their name (``checkpoint-500`` before ``checkpoint-1000``).
    """
    if not isinstance(path, (str, Path)):
        return None
    p = Path(path)
    if not p.is_dir() or (p / "config.json").exists() or (p / "modules.json").exists():
        return None
    subs = [d for d in p.iterdir() if d.is_dir() and ((d / "config.json").exists() or (d / "modules.json").exists())]
    if not subs:
        return None

    return [(d.name, d) for d in sorted(subs, key=lambda d: (checkpoint_step(d.name, -1), d.name))]


def checkpoint_step(name: str, default: int) -> int:
    """The training step a checkpoint folder's name says: its last number (``step-000040``, ``checkpoint-500``)."""
    nums = re.findall(r"\d+", name)
    return int(nums[-1]) if nums else default


def write_csv(frame, out: Path, stem: str) -> Path:
    """``out/<stem>.csv``, written atomically: a full disk or a kill keeps the previous file, never a torn one."""
    path = out / f"{stem}.csv"
    with atomic.output_errors(path), atomic.atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
    return path


def write_json(obj: Any, out: Path, stem: str) -> Path:
    """``out/<stem>.json`` (numpy numbers as numbers), written atomically."""
    with atomic.output_errors(out / f"{stem}.json"):
        return atomic.write_json(out / f"{stem}.json", obj, default=jsonable)


def jsonable(x: Any) -> Any:
    """What JSON cannot hold as what it can: numpy numbers as numbers, arrays as lists, anything else as text."""
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)
