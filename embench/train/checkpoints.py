"""Checkpoints: the kept model as ONE folder that transformers, sentence-transformers and embench load
with the same vectors, and the resume state (weights, optimiser, scheduler, step, random states).

The kept folder holds ``config.json``, the weights and the tokenizer at its root (``AutoModel`` loads
it), the sentence-transformers modules beside them, written by sentence-transformers' own ``save``
(``modules.json``, ``config_sentence_transformers.json``, ``1_Pooling/``, ``2_Dense/`` for a ``cls``
pooler head, ``Normalize``; :mod:`embench.train.st_export`), ``embench_training.json`` (everything the
run was given) and a model card (``README.md``, :mod:`embench.train.model_card`). A checkpoint that
sentence-transformers cannot reproduce (two-layer poolings, bidirectional decoder layers) stays a
Hugging Face folder, and its card and ``embench_training.json`` say why.
"""

from __future__ import annotations

import json
import logging
import pickle
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..core.atomic import atomic_file, replace_folder, write_json
from ..core.errors import EmbenchError
from ..core.signals import interrupts_held

log = logging.getLogger(__name__)
RESUME_DIR = "checkpoint-last"
BEST_DIR = "best"


def save_model_folder(encoder: torch.nn.Module, tokenizer: Any, folder: Path, *, pooling: str, max_length: int,
                      meta: dict[str, Any], normalize: bool = False) -> Path:
    """Write ``encoder`` + ``tokenizer`` to ``folder`` (replaced atomically) as a Hugging Face folder that is
    also a sentence-transformers folder where sentence-transformers can give its vectors (``pooling``, then
    unit length when ``normalize``), with ``embench_training.json`` and a model card from ``meta``."""
    from .model_card import write_model_card
    from .st_export import prompt_prefix, unexpressible, write_sentence_transformers

    folder = Path(folder)
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    encoder.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    prompt = str(meta.get("prompt") or "")
    why_not = unexpressible(encoder, pooling, meta)
    modules = None
    if why_not is None:
        modules = write_sentence_transformers(tmp, encoder, pooling=pooling, max_length=int(max_length), prompt=prompt,
                                              normalize=normalize)
    else:
        log.warning("%s is written as a Hugging Face folder only: %s", folder, why_not)
    write_json(tmp / "embench_training.json", {**meta, "pooling": pooling, "max_length": int(max_length), "normalize": normalize,
                                                "sentence_transformers": modules is not None,
                                                **({"sentence_transformers_missing": why_not} if why_not else {})})
    write_model_card(tmp, final=folder, meta=meta, pooling=pooling, max_length=int(max_length), st_modules=modules,
                     why_not_st=why_not, prompt_prefix=prompt_prefix(prompt))
    return replace_folder(tmp, folder)


def series_meta(scores: dict[str, Any] | None) -> dict[str, Any]:
    """What a ``--save-every`` checkpoint's card and ``embench_training.json`` add: that it is one of the series (not
    the kept step, which ``best/`` holds) and its step's scores when that step was evaluated."""
    why = "a checkpoint of the --save-every series; `best/` holds the kept step"
    return {"series": True, **({"scores": scores, "selected": why} if scores else {"selected": why + ", saved without an evaluation"})}


def resume_every(cfg: Any) -> int:
    """Steps between resume states: ``save_steps``, else each evaluation's, else 500 (transformers' ``save_steps``)."""
    return cfg.save_steps or cfg.eval_steps or 500


def resumable(out: Path | str) -> bool:
    """Whether the run in ``out`` can be continued: its resume state ``checkpoint-last/state.pt`` is there (written
    every ``save_steps``; a run stopped before the first has none)."""
    return (Path(out) / RESUME_DIR / "state.pt").is_file()


def rng_state() -> dict[str, Any]:
    """Every random state as tensors and plain values, so ``torch.load(weights_only=True)`` reads it back."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state = {"python": random.getstate(), "torch": torch.get_rng_state(),
             "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                       "has_gauss": int(has_gauss), "cached_gaussian": float(cached)}}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    n = state["numpy"]
    np.random.set_state((n["kind"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_resume(folder: Path, *, model: torch.nn.Module, optimizer, scheduler, step: int, extra: dict[str, Any],
                rng_ranks: list[dict[str, Any]] | None = None) -> Path:
    """Everything needed to continue training from ``step``, written atomically. ``rng_ranks``: every process's
    random state in rank order (``rank_rng.py``); this process's alone when not given."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    main, *others = rng_ranks or [rng_state()]
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "step": step,
        "rng": main,
        "rng_other_ranks": others,  # ranks 1, 2, ... (none for one process)
        **extra,
    }
    # under a name of its own (even if a second run slipped past the lock); a full disk leaves no half-written
    # state beside the good one
    with interrupts_held():  # an interrupt lands once both files are whole
        with atomic_file(folder / "state.pt") as fh:
            torch.save(state, fh)
        write_json(folder / "step.json", {"step": step, **{k: v for k, v in extra.items() if k != "config"}})
    return folder


def load_resume(folder: Path) -> dict[str, Any]:
    """The resume state, read with ``weights_only=True``: tensors and plain values only, so a crafted
    ``state.pt`` cannot run code (unpickling anything else is refused)."""
    path = Path(folder) / "state.pt"
    if not path.is_file():
        raise EmbenchError(f"--resume: no checkpoint at {path}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        first = str(e).strip().splitlines()[-1][:200] if str(e).strip() else type(e).__name__
        raise EmbenchError(f"--resume: {path} holds more than tensors and plain values, refused (loading it could "
                           f"run code; checkpoints of older embench versions must be trained again): {first}") from None
    except Exception as e:
        raise EmbenchError(f"--resume: cannot read {path} ({type(e).__name__}: {e})") from None
    if not isinstance(state, dict) or not all(k in state for k in ("model", "optimizer", "scheduler", "step", "rng")):
        raise EmbenchError(f"--resume: {path} is not an embench resume state")
    return state


def saved_step(folder: Path) -> int | None:
    """The step of the resume state in ``folder``, or None when there is none."""
    try:
        return int(json.loads((Path(folder) / "step.json").read_text(encoding="utf-8"))["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# what makes a resumed run another run: the model and its trained parts, the batches (data, seed, size,
# maximum length, prompt); each refused with both values
COMPATIBLE_KEYS = ("method", "model", "batch_size", "pooling", "seed", "from_scratch", "method_options", "data",
                   "max_examples", "max_length", "freeze_layers", "freeze_embeddings", "lora_r", "lora_alpha",
                   "lora_targets", "load_kbit", "prompt", "model_config", "family", "drop_last")
# what a resumed run may change, said aloud: the schedule's length (it stretches from the saved step), the
# precision, and how the global batch is split (the same in-batch negatives)
ANNOUNCED_KEYS = {"max_steps": "the learning-rate schedule is laid over the new length from the saved step",
                  "epochs": "the learning-rate schedule is laid over the new length from the saved step",
                  "precision": "the steps from here run in the new precision",
                  "grad_accumulation": "the same global batch, split into another number of micro-batches",
                  "group_by_length": "a split step's texts grouped into passes another way (the same batch)",
                  "bucket_tokens": "a pass's texts cut into length buckets of another size (the same batch)",
                  "bucket_min_tokens": "a pass's texts cut into length buckets another way (the same batch)",
                  "unpadded": "passes run as rows of real tokens, or padded again (the same batch)"}


def check_compatible(saved: dict[str, Any], cfg: Any) -> list[str]:
    """A resumed run must be the run that was stopped (same model, parts trained, batches): anything else is
    refused; the changes it may make are returned, one sentence each, for the caller to say."""
    now = cfg.to_dict()
    for key in COMPATIBLE_KEYS:
        if key in saved and saved[key] != now[key]:
            raise EmbenchError(f"--resume: the checkpoint was trained with {key}={saved[key]!r}, this run has "
                               f"{now[key]!r}; resume with the same options, or train into another --out")
    return [f"--resume: {key}={now[key]!r} where the checkpoint had {saved[key]!r}: {why}"
            for key, why in ANNOUNCED_KEYS.items() if key in saved and saved[key] != now[key]]
