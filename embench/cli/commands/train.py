"""``embench train``: SimCSE (unsupervised, supervised), crops and the dropout baseline.

Options come from ``--config FILE`` (YAML or TOML), then the command line (``--set key=value``
reaches every option of :class:`embench.train.TrainConfig`). Multi-GPU: ``torchrun --nproc-per-node
N -m embench.cli train ...``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("train")(train)


def train(
    method: Annotated[str | None, typer.Option("--method", help="unsup-simcse | sup-simcse | crop | dropout")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model name, alias or folder to start from.")] = None,
    data: Annotated[list[str] | None, typer.Option("--data", help="Training data: a path, or corpora | snli | 20newsgroups (data root); repeatable.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="YAML or TOML file of training options.")] = None,
    out: Annotated[str | None, typer.Option("--out", "-o", help="Output folder (best/, checkpoint-last/, metrics.jsonl).")] = None,
    data_root: Annotated[str | None, typer.Option("--data-root", help="Data root for the keywords and STS-B dev (default $EMBENCH_DATA).")] = None,
    from_scratch: Annotated[bool | None, typer.Option("--from-scratch/--pretrained", help="Random initialisation of the model's config.")] = None,
    pooling: Annotated[str | None, typer.Option(help="Pooler used in training and at test (default: the method's).")] = None,
    mlp: Annotated[str | None, typer.Option(help="MLP head: none | train (training only) | keep.")] = None,
    temperature: Annotated[float | None, typer.Option(help="InfoNCE temperature (default 0.05).")] = None,
    hard_negative_weight: Annotated[float | None, typer.Option(help="alpha: weight of each anchor's own hard negative (sup-simcse).")] = None,
    mlm_weight: Annotated[float | None, typer.Option(help="lambda of the auxiliary MLM loss (0 = off).")] = None,
    freeze_embeddings: Annotated[bool | None, typer.Option("--freeze-embeddings/--train-embeddings", help="Freeze the embedding layer.")] = None,
    freeze_layers: Annotated[int | None, typer.Option(help="Freeze the first n transformer layers.")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Global batch size (in-batch negatives over all processes).")] = None,
    lr: Annotated[float | None, typer.Option(help="Peak learning rate.")] = None,
    epochs: Annotated[float | None, typer.Option(help="Epochs (ignored when --max-steps is given).")] = None,
    max_steps: Annotated[int | None, typer.Option(help="Training steps.")] = None,
    max_length: Annotated[int | None, typer.Option(help="Maximum tokens per training text.")] = None,
    max_examples: Annotated[int | None, typer.Option(help="Use only the first n training examples.")] = None,
    eval_steps: Annotated[int | None, typer.Option(help="Evaluate on STS-B dev every n steps (0 = never; keep the last step).")] = None,
    save_steps: Annotated[int | None, typer.Option(help="Write the resume checkpoint every n steps.")] = None,
    seed: Annotated[int | None, typer.Option(help="Random seed.")] = None,
    device: Annotated[str | None, typer.Option(help="cpu, cuda, cuda:1 (default: CUDA when present).")] = None,
    bf16: Annotated[bool | None, typer.Option("--bf16/--fp32", help="bf16 autocast (default: on where the GPU supports it).")] = None,
    compile_: Annotated[bool | None, typer.Option("--compile/--no-compile", help="torch.compile the model.")] = None,
    resume: Annotated[bool | None, typer.Option("--resume", help="Continue from OUT/checkpoint-last.")] = None,
    tensorboard: Annotated[bool | None, typer.Option("--tensorboard", help="Also log to OUT/tensorboard.")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Any training option as key=value (JSON values); repeatable.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Train a sentence encoder; keep the best checkpoint (STS-B dev) as HF + sentence-transformers folder."""
    from rich.console import Console

    from ...train import make_config
    from ...train import train as run_training
    from ...train.config import parse_override

    overrides = dict(
        method=method, model=model, data=data or None, out=out, data_root=data_root, from_scratch=from_scratch,
        pooling=pooling, mlp=mlp, temperature=temperature, hard_negative_weight=hard_negative_weight,
        mlm_weight=mlm_weight, freeze_embeddings=freeze_embeddings, freeze_layers=freeze_layers, batch_size=batch_size,
        lr=lr, epochs=epochs, max_steps=max_steps, max_length=max_length, max_examples=max_examples,
        eval_steps=eval_steps, save_steps=save_steps, seed=seed, device=device, bf16=bf16, compile=compile_,
        resume=resume, tensorboard=tensorboard,
    )
    for item in set_ or []:
        key, value = parse_override(item)
        overrides[key] = value
    if quiet:
        overrides["progress"] = False
    cfg = make_config(config, **overrides)
    err = Console(stderr=True)
    try:
        result = run_training(cfg)
    except KeyboardInterrupt:
        err.print(f"[yellow]interrupted[/]: run the same command with --resume to continue from {cfg.out}/checkpoint-last")
        raise typer.Exit(130) from None
    if os.environ.get("RANK", "0") != "0":  # under torchrun only the first process reports
        return
    score = f"STS-B dev {100 * result.best_score:.2f} at step {result.best_step}" if result.best_score is not None else f"step {result.best_step}"
    before = f" (before training {100 * result.initial_score:.2f})" if result.initial_score is not None else ""
    Console().print(f"kept: {result.best_dir}  {score}{before}; metrics: {result.metrics}", highlight=False)
