"""The training loop shared by every method.

AdamW (fused kernel on CUDA, and on CPU where torch has it), linear warm-up then linear decay (the cropping paper's schedule; SimCSE uses
transformers' default linear schedule), gradient clipping, bf16 autocast on GPUs that support it,
optional ``torch.compile``, seeds. Every ``eval_steps`` (and before the first step) the model is
scored on the STS-B dev split through ``embench.evaluate`` — the same task code as ``embench run``
— and the best checkpoint is kept (SimCSE App. A: "evaluate every 250 steps on STS-B dev, keep the
best"). A resume checkpoint is written every ``save_steps``; a NaN/inf loss or gradient stops
training before the bad update and names the last good checkpoint.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..core.errors import EmbenchError
from ..data.root import DataRoot
from ..models.loader import pick_device, resolve_model_path, sentence_transformers_config
from ..report.progress import RateProgress
from . import checkpoints, data, distributed, losses
from .config import TrainConfig
from .crops import CropCorpus
from .methods import METHODS, ContrastiveModel, Method, freeze

log = logging.getLogger(__name__)


class TrainingDivergedError(EmbenchError):
    """The loss or a gradient became NaN/inf; the message names the last good checkpoint."""


@dataclass
class TrainResult:
    out: Path
    best_dir: Path
    best_step: int
    best_score: float | None
    initial_score: float | None
    steps: int
    last_loss: float | None
    metrics: Path
    history: list[dict[str, Any]] = field(default_factory=list)


def resolve(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` with the method's defaults filled in and values checked."""
    method = METHODS.get(cfg.method)
    d = method.defaults
    cfg = replace(
        cfg,
        method=method.name,
        pooling=cfg.pooling or d.get("pooling", "mean"),
        mlp=cfg.mlp or d.get("mlp", "none"),
        lr=cfg.lr if cfg.lr is not None else d.get("lr", 3e-5),
        batch_size=cfg.batch_size or d.get("batch_size", 64),
        max_length=cfg.max_length or d.get("max_length", 128),
    )
    for name, value, low in (("batch-size", cfg.batch_size, 2), ("max-length", cfg.max_length, 4),
                             ("log-steps", cfg.log_steps, 1)):
        if value < low:
            raise EmbenchError(f"--{name} must be at least {low}, got {value}")
    if cfg.lr <= 0 or cfg.temperature <= 0 or cfg.hard_negative_weight <= 0:
        raise EmbenchError("--lr, --temperature and --hard-negative-weight must be positive")
    if not 0 <= cfg.mlm_weight or not 0 < cfg.mlm_probability < 1:
        raise EmbenchError("--mlm-weight must be >= 0 and --mlm-probability in (0, 1)")
    if cfg.max_steps is not None and cfg.max_steps < 1:
        raise EmbenchError(f"--max-steps must be at least 1, got {cfg.max_steps}")
    return cfg


# -- model ---------------------------------------------------------------------------------------
def build_model(cfg: TrainConfig, device: str) -> tuple[ContrastiveModel, Any]:
    """The encoder (pretrained, or randomly initialised from its config) wrapped for training."""
    from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM, AutoTokenizer

    folder, tried, hub_id = resolve_model_path(cfg.model)
    source = str(folder) if folder is not None else hub_id
    st = sentence_transformers_config(folder) if folder is not None else None
    hf = str(st["transformer_path"]) if st else source
    try:
        tokenizer = AutoTokenizer.from_pretrained(hf if st is None or _has_tokenizer(Path(hf)) else source)
        config = AutoConfig.from_pretrained(hf, **cfg.model_config)
    except Exception as e:
        raise EmbenchError(f"--model {cfg.model}: cannot load it ({type(e).__name__}: {e}); tried {tried}") from None
    if cfg.dropout is not None:
        for attr in ("hidden_dropout_prob", "attention_probs_dropout_prob", "dropout", "attention_dropout"):
            if hasattr(config, attr):
                setattr(config, attr, cfg.dropout)
    mlm_head = None
    if cfg.mlm_weight > 0:
        full = AutoModelForMaskedLM.from_config(config) if cfg.from_scratch else AutoModelForMaskedLM.from_pretrained(hf, config=config)
        encoder = full.base_model
        mlm_head = _MLMHead(full)
    elif cfg.from_scratch:
        encoder = AutoModel.from_config(config)
    else:
        encoder = AutoModel.from_pretrained(hf, config=config)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    freeze(encoder, cfg.freeze_embeddings, cfg.freeze_layers)
    model = ContrastiveModel(encoder, cfg.pooling, cfg.mlp, mlm_head)
    return model.to(device), tokenizer


def _has_tokenizer(p: Path) -> bool:
    return any((p / f).exists() for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt"))


class _MLMHead(torch.nn.Module):
    """The masked-LM head of a ``*ForMaskedLM`` model, applied to hidden states."""

    def __init__(self, full: torch.nn.Module):
        super().__init__()
        for name in ("cls", "lm_head", "predictions", "vocab_projector"):
            if isinstance(getattr(full, name, None), torch.nn.Module):
                self.head = getattr(full, name)
                return
        raise EmbenchError(f"--mlm-weight: cannot find the MLM head of {type(full).__name__}")

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return self.head(states)


# -- data ----------------------------------------------------------------------------------------
def load_examples(cfg: TrainConfig, method: Method, root: DataRoot) -> Any:
    examples = data.load(method.data_kind, cfg.data, root)
    if cfg.max_examples:
        examples = examples[: cfg.max_examples]
    if method.data_kind == "documents":
        examples = CropCorpus.build(examples, cfg.crop_sentences, cfg.crop_min_chars, cfg.crop_max_chars,
                                    source=", ".join(cfg.data))
    return examples


def batch_indices(n: int, global_batch: int, step: int, seed: int, dist: distributed.DistInfo) -> list[int]:
    """This process's example indices at ``step`` (0-based): a seeded shuffle per epoch, cut into
    global batches, each split evenly over processes. Deterministic, so a resumed run sees the
    batches the interrupted one would have."""
    per_epoch = n // global_batch
    epoch, pos = divmod(step, per_epoch)
    order = list(range(n))
    random.Random(seed * 1_000_003 + epoch).shuffle(order)
    batch = order[pos * global_batch : (pos + 1) * global_batch]
    local = global_batch // dist.world_size
    return batch[dist.rank * local : (dist.rank + 1) * local]


# -- evaluation ------------------------------------------------------------------------------------
def stsb_dev(encoder: torch.nn.Module, tokenizer: Any, cfg: TrainConfig, root: DataRoot, bf16: bool) -> float:
    """Spearman x1 of cosine similarities on the STS-B dev split, through ``embench.evaluate``."""
    from ..api import evaluate
    from ..models.loader import load_model

    was_training = encoder.training
    enc = load_model(encoder, tokenizer=tokenizer, pooling=cfg.pooling, max_length=cfg.eval_max_length,
                     dtype="bf16" if bf16 else "fp32", device=str(next(encoder.parameters()).device), name="training")
    try:
        ev = evaluate(enc, tasks=["STSBenchmark"], stsb_split="dev", save=False, use_cache=False,
                      data=root.path, batch_size=cfg.eval_batch_size)
    finally:
        encoder.train(was_training)  # HFEncoder puts the model in eval mode on first use
    return float(ev.records[0].main_score)


# -- the loop ------------------------------------------------------------------------------------
def train(cfg: TrainConfig) -> TrainResult:
    """Train ``cfg.method`` and keep the best checkpoint; see the module docstring.

    >>> from embench.train import make_config, train
    >>> r = train(make_config(method="crop", model="all-MiniLM-L6-v2", data=["20newsgroups"],
    ...                       max_steps=200, out="runs/crop"))           # doctest: +SKIP
    >>> r.best_dir                                                        # doctest: +SKIP
    """
    cfg = resolve(cfg)
    method = METHODS.get(cfg.method)
    dist = distributed.init_from_env(cfg.device)
    device = pick_device(cfg.device)
    if dist.enabled and device.startswith("cuda"):
        device = f"cuda:{dist.local_rank}"
    if cfg.batch_size % dist.world_size:
        raise EmbenchError(f"--batch-size {cfg.batch_size} must divide evenly over {dist.world_size} processes")
    cuda = device.startswith("cuda")
    bf16 = bool(cfg.bf16) if cfg.bf16 is not None else (cuda and torch.cuda.is_bf16_supported())
    if bf16 and not cuda:
        raise EmbenchError("--bf16 needs a CUDA GPU (CPU training runs in fp32)")
    _seed(cfg.seed + dist.rank)
    root = DataRoot.resolve(cfg.data_root)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)

    examples = load_examples(cfg, method, root)
    n = len(examples)
    per_epoch = n // cfg.batch_size
    if per_epoch == 0:
        raise EmbenchError(f"{n} training examples are fewer than one batch of {cfg.batch_size}")
    total = cfg.max_steps or max(1, math.ceil(cfg.epochs * per_epoch))
    warmup = int(cfg.warmup_ratio * total)

    model, tokenizer = build_model(cfg, device)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise EmbenchError("every parameter is frozen: nothing to train")
    optimizer = _adamw(params, cfg)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: (s + 1) / max(1, warmup) if s < warmup else max(0.0, (total - s) / max(1, total - warmup))
    )
    runner: torch.nn.Module = model
    if dist.enabled:
        runner = torch.nn.parallel.DistributedDataParallel(
            # the unused pooler head is frozen by ContrastiveModel, so every trained parameter gets a gradient
            model, device_ids=[dist.local_rank] if cuda else None, find_unused_parameters=False
        )
    if cfg.compile:
        runner = torch.compile(runner)

    resume_dir, best_dir = out / checkpoints.RESUME_DIR, out / checkpoints.BEST_DIR
    metrics_path = out / "metrics.jsonl"
    start, best_score, best_step, initial = 0, None, 0, None
    if cfg.resume:
        state = checkpoints.load_resume(resume_dir)
        _check_compatible(state.get("config", {}), cfg)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        checkpoints.set_rng_state(state["rng"])
        start, best_score, best_step, initial = state["step"], state.get("best_score"), state.get("best_step", 0), state.get("initial_score")
        if start >= total:
            raise EmbenchError(f"--resume: the checkpoint is at step {start}, and the run has {total} steps")
        if dist.is_main and metrics_path.is_file():  # steps after the checkpoint are redone: drop their records
            kept = [x for x in metrics_path.read_text(encoding="utf-8").splitlines() if x.strip() and json.loads(x)["step"] <= start]
            metrics_path.write_text("".join(x + "\n" for x in kept), encoding="utf-8")
    elif dist.is_main:
        metrics_path.unlink(missing_ok=True)
        _write_json(out / "train_config.json", {**cfg.to_dict(), "resolved_total_steps": total, "warmup_steps": warmup,
                                               "examples": n, "world_size": dist.world_size, "device": device, "bf16": bf16})

    log_file = open(metrics_path, "a", encoding="utf-8") if dist.is_main else None
    writer = _tensorboard(out) if cfg.tensorboard and dist.is_main else None
    history: list[dict[str, Any]] = []
    meta = {"method": cfg.method, "base_model": cfg.model, "from_scratch": cfg.from_scratch}

    def emit(rec: dict[str, Any]) -> None:
        history.append(rec)
        if log_file is not None:
            log_file.write(json.dumps(rec) + "\n")
            log_file.flush()
        if writer is not None:
            for k, v in rec.items():
                if isinstance(v, (int, float)) and k != "step":
                    writer.add_scalar(k, v, rec["step"])

    def evaluate_and_keep(step: int) -> None:
        nonlocal best_score, best_step, initial
        if dist.is_main:
            score = stsb_dev(model.encoder, tokenizer, cfg, root, bf16)
            if initial is None and step == 0:
                initial = score
            better = best_score is None or score > best_score
            if better:
                best_score, best_step = score, step
                checkpoints.save_model_folder(model.encoder, tokenizer, best_dir, pooling=cfg.pooling,
                                              max_length=cfg.max_length, meta={**meta, "step": step, "stsb_dev_spearman": score})
            emit({"step": step, "stsb_dev_spearman": score, "best": better})
        distributed.barrier()

    def save_resume(step: int) -> None:
        if dist.is_main:
            checkpoints.save_resume(resume_dir, model=model, optimizer=optimizer, scheduler=scheduler, step=step, extra={
                "best_score": best_score, "best_step": best_step, "initial_score": initial, "config": cfg.to_dict()})
        distributed.barrier()

    save_every = cfg.save_steps or cfg.eval_steps or 500
    if cfg.eval_steps and start == 0:
        evaluate_and_keep(0)
    model.train()
    last_loss = None
    window_t, window_steps, window_tokens = time.perf_counter(), 0, 0
    n_params = sum(p.numel() for p in model.encoder.parameters())
    progress = RateProgress(cfg.progress and dist.is_main, "training", f"{cfg.method} {Path(cfg.model).name}", total, "steps",
                           completed=start, fields=("loss",))
    try:
        with progress:
            for step in range(start, total):
                idx = batch_indices(n, cfg.batch_size, step, cfg.seed, dist)
                rng = random.Random(f"{cfg.seed}:{step}:{dist.rank}")
                views = method.views(examples, idx, rng)
                enc, mlm_ids, mlm_labels = _tokenize(tokenizer, views, cfg, device)
                with _autocast(bf16, cuda):
                    z, mlm_logits = runner(enc, mlm_ids)
                loss = compute_loss(z, len(views), cfg, dist, mlm_logits, mlm_labels)
                value = distributed.mean_over_processes(float(loss.detach()))
                if not math.isfinite(value):
                    _diverged("loss", value, step, save_resume, resume_dir, best_dir, best_score)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                gnorm = float(torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip if cfg.grad_clip > 0 else float("inf")))
                if not math.isfinite(gnorm):
                    optimizer.zero_grad(set_to_none=True)
                    _diverged("gradient norm", gnorm, step, save_resume, resume_dir, best_dir, best_score)
                optimizer.step()
                scheduler.step()
                last_loss = value
                done = step + 1
                window_steps += 1
                window_tokens += int(enc["attention_mask"].sum()) * dist.world_size
                progress.advance(loss=f"{value:.4f}")
                if done % cfg.log_steps == 0 or done == total:
                    dt = max(time.perf_counter() - window_t, 1e-9)
                    tps = window_tokens / dt
                    emit({"step": done, "loss": value, "lr": scheduler.get_last_lr()[0], "grad_norm": gnorm,
                          "steps_per_s": window_steps / dt, "tokens_per_s": tps,
                          # 6 N FLOPs per token (forward + backward): model FLOPs, for MFU against the GPU's peak
                          "model_tflops_per_s": 6 * n_params * tps / 1e12})
                    window_t, window_steps, window_tokens = time.perf_counter(), 0, 0
                if cfg.eval_steps and (done % cfg.eval_steps == 0 or done == total):
                    evaluate_and_keep(done)
                if done % save_every == 0 or done == total:
                    save_resume(done)
                if window_steps == 0:  # speed is measured on training steps only, not evaluation or saving
                    window_t = time.perf_counter()
    finally:
        if log_file is not None:
            log_file.close()
        if writer is not None:
            writer.close()
    if not cfg.eval_steps and dist.is_main:  # no model selection: keep the last step
        best_step = total
        checkpoints.save_model_folder(model.encoder, tokenizer, best_dir, pooling=cfg.pooling, max_length=cfg.max_length,
                                      meta={**meta, "step": total, "selected": "last step (no evaluation)"})
    distributed.barrier()
    return TrainResult(out, best_dir, best_step, best_score, initial, total, last_loss, metrics_path, history)


def compute_loss(z: torch.Tensor, n_views: int, cfg: TrainConfig, dist: distributed.DistInfo,
                 mlm_logits: torch.Tensor | None = None, mlm_labels: torch.Tensor | None = None) -> torch.Tensor:
    """InfoNCE of view 0 against view 1 (and view 2 as hard negatives) over the global batch, plus
    lambda * MLM. ``z`` holds the views one after another (n_views * b rows)."""
    b = z.shape[0] // n_views
    views = z.float().reshape(n_views, b, -1)
    positives = distributed.gather_with_grad(views[1])
    hard = distributed.gather_with_grad(views[2]) if n_views > 2 else None
    loss = losses.info_nce(views[0], positives, cfg.temperature, hard, cfg.hard_negative_weight, offset=dist.rank * b)
    if mlm_logits is not None and cfg.mlm_weight > 0:
        loss = loss + cfg.mlm_weight * losses.mlm_loss(mlm_logits, mlm_labels)
    return loss


def _tokenize(tokenizer: Any, views: list[list[str]], cfg: TrainConfig, device: str):
    texts = [t for v in views for t in v]
    enc = tokenizer(texts, padding=True, truncation=True, max_length=cfg.max_length, return_tensors="pt")
    enc = {k: v.to(device) for k, v in enc.items()}
    if cfg.mlm_weight <= 0:
        return enc, None, None
    special = torch.tensor([tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True)
                            for ids in enc["input_ids"].tolist()], device=device)
    special = special.bool() | (enc["attention_mask"] == 0)
    ids, labels = losses.mask_tokens(enc["input_ids"], special, tokenizer.mask_token_id, len(tokenizer),
                                     cfg.mlm_probability)
    return enc, ids, labels


def _adamw(params: list[torch.nn.Parameter], cfg: TrainConfig) -> torch.optim.Optimizer:
    """AdamW with the fused kernel (CUDA, and CPU on recent torch); the foreach one where fused is refused."""
    try:
        return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, fused=True)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, foreach=True)


def _autocast(bf16: bool, cuda: bool):
    import contextlib

    if not bf16:
        return contextlib.nullcontext()
    return torch.autocast(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16)


def _diverged(what: str, value: float, step: int, save_resume, resume_dir: Path, best_dir: Path, best: float | None) -> None:
    # The bad update has not been applied: the weights now are those after `step` good steps.
    save_resume(step)
    kept = f"; the best checkpoint is {best_dir} (STS-B dev {100 * best:.2f})" if best is not None else ""
    raise TrainingDivergedError(
        f"the {what} became {value} at step {step + 1}: training stopped before that update. "
        f"The last good checkpoint is {resume_dir} (step {step}){kept}. Lower --lr or check the data."
    )


def _check_compatible(saved: dict[str, Any], cfg: TrainConfig) -> None:
    for key in ("method", "model", "batch_size", "pooling", "mlp", "seed", "from_scratch"):
        if key in saved and saved[key] != getattr(cfg, key):
            raise EmbenchError(f"--resume: the checkpoint was trained with {key}={saved[key]!r}, this run has {getattr(cfg, key)!r}")


def _seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=2, default=str) + "\n", encoding="utf-8")


def _tensorboard(out: Path):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise EmbenchError("--tensorboard needs the tensorboard package (pip install tensorboard)") from None
    return SummaryWriter(str(out / "tensorboard"))
