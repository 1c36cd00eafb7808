"""``embench train``: any registered method, from a recipe, a config file and options.

Options come in layers: the method's defaults, ``--recipe NAME`` (the papers' presets; ``embench list
recipes``), ``--config FILE`` (YAML or TOML), then the command line (``--set key=value`` reaches every
option of :class:`embench.train.TrainConfig` and of the method). ``--show`` prints the resolved
configuration and exits. Multi-GPU: ``torchrun --nproc-per-node N -m embench.cli train ...``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from ..options import SEED_MAX

Opt = typer.Option
TRAIN_KEYWORDS = ("corpora", "snli", "20newsgroups", "twentynewsgroups")  # the data root's training sets (data/training_sets.py)


# One parameter per option, as typer wants them: the signature is long, the body short.
def train(
    method: Annotated[str | None, Opt("--method", help="Training method (embench list methods).")] = None,
    recipe: Annotated[str | None, Opt("--recipe", "-r", help="A paper's recipe (embench list recipes): simcse-unsup, simcse-sup, crop, crop-scratch, jtcse-bert, jtcse-roberta, bellm, multicsr, multicsr-code.")] = None,
    show: Annotated[bool, Opt("--show", help="Print the resolved configuration and exit.")] = False,
    model: Annotated[list[str] | None, Opt("--model", "-m", help="Model name, alias, folder or .gguf file to start from (one).")] = None,
    revision: Annotated[str | None, Opt("--revision", help="Hub revision of a hub id --model: a commit, branch or tag (kept in train_config.json).")] = None,
    train_data: Annotated[list[str] | None, Opt("--train-data", help="Training data: a path, or corpora | snli | 20newsgroups (from the data root); repeatable.")] = None,
    config: Annotated[Path | None, Opt("--config", help="YAML or TOML file of training options.")] = None,
    out: Annotated[str | None, Opt("--out", "-o", help="Output folder (best/, checkpoints/, checkpoint-last/, metrics.jsonl).")] = None,
    data: Annotated[str | None, Opt("--data", help="Data root, for the keywords of --train-data and for evaluation (default: $EMBENCH_DATA, then ~/.cache/embench/data).")] = None,
    family: Annotated[str | None, Opt("--family", help="Model family (embench list families; default: detected).")] = None,
    prompt: Annotated[str | None, Opt("--prompt", help="Template with {text} applied to every training text.")] = None,
    from_scratch: Annotated[bool | None, Opt("--from-scratch/--pretrained", help="Random initialisation of the model's config.")] = None,
    pooling: Annotated[str | None, Opt(help="Pooler used in training and at test (default: the method's).")] = None,
    mlp: Annotated[str | None, Opt(help="SimCSE's MLP head: none | train (training only) | keep.")] = None,
    temperature: Annotated[float | None, Opt(help="InfoNCE temperature (default 0.05).")] = None,
    hard_negative_weight: Annotated[float | None, Opt(help="alpha: weight of each anchor's own hard negative (sup-simcse).")] = None,
    false_negative_filter: Annotated[str | None, Opt("--false-negative-filter", help="sup-simcse: a frozen encoder whose in-batch cosines >= --sigma mask false negatives (MultiCSR stage 3).")] = None,
    sigma: Annotated[float | None, Opt(help="sup-simcse with --false-negative-filter: the cosine threshold (default 0.9).")] = None,
    fn_mask_variant: Annotated[str | None, Opt(help="False-negative mask: paper (removed from the softmax) | code (logit x 0, the authors' code).")] = None,
    fn_loss: Annotated[str | None, Opt(help="With --false-negative-filter: infonce (paper) | bce (the authors' code).")] = None,
    mlm_weight: Annotated[float | None, Opt(help="lambda of the auxiliary MLM loss (0 = off).")] = None,
    tower2: Annotated[str | None, Opt("--tower2", help="jtcse: the second tower (default: a second copy of --model).")] = None,
    cross_layers: Annotated[int | None, Opt(help="jtcse: cross-attention layers, one every num_layers/n layers (0 = off).")] = None,
    teacher: Annotated[str | None, Opt("--teacher", help="distill: the teacher model, e.g. ensemble:A+B or a jtcse output.")] = None,
    freeze_embeddings: Annotated[bool | None, Opt("--freeze-embeddings/--train-embeddings", help="Freeze the embedding layer.")] = None,
    freeze_layers: Annotated[int | None, Opt(help="Freeze the first n transformer layers.")] = None,
    lora_r: Annotated[int | None, Opt(help="Train LoRA adapters of this rank (peft) instead of the weights.")] = None,
    lora_alpha: Annotated[float | None, Opt(help="LoRA alpha (scaling alpha / r; default 32).")] = None,
    lora_dropout: Annotated[float | None, Opt(help="LoRA dropout (default 0.1).")] = None,
    lora_target: Annotated[list[str] | None, Opt("--lora-target", help="Module name(s) LoRA adapts, e.g. q_proj (default: every linear layer); repeatable.")] = None,
    bidirectional_last: Annotated[int | None, Opt(help="bellm: the last K decoder layers attend in both directions (default 1).")] = None,
    bidirectional_mode: Annotated[str | None, Opt(help="bellm: how those layers are read: sum (Eq. 5, the default), sum-code (the authors' AnglE code), mask (one stack, padding masked) or billm (one stack, padding attended; --recipe bellm, the authors' README).")] = None,
    ibn_weight: Annotated[float | None, Opt(help="bellm: weight of the in-batch + hard negative loss, Eq. 6 (default 1).")] = None,
    cosine_weight: Annotated[float | None, Opt(help="bellm: weight of AnglE's CoSENT objective (default 0).")] = None,
    angle_weight: Annotated[float | None, Opt(help="bellm: weight of AnglE's angle objective (default 0).")] = None,
    batch_size: Annotated[int | None, Opt(help="GLOBAL batch size (over processes and accumulation steps).")] = None,
    grad_accumulation: Annotated[int | None, Opt(help="Micro-batches per step (the loss still sees the whole batch); --auto-fit splits further when a step would not fit.")] = None,
    lr: Annotated[float | None, Opt(help="Peak learning rate.")] = None,
    epochs: Annotated[float | None, Opt(help="Epochs (ignored when --max-steps is given).")] = None,
    max_steps: Annotated[int | None, Opt(help="Training steps.")] = None,
    max_length: Annotated[int | None, Opt(help="Maximum tokens per training text.")] = None,
    max_examples: Annotated[int | None, Opt(help="Use only the first n training examples.")] = None,
    eval_steps: Annotated[int | None, Opt(help="Evaluate every n steps (0 = never; keep the last step).")] = None,
    eval_task: Annotated[list[str] | None, Opt("--eval-task", help="Task or suite scored at each evaluation (default STSBenchmark-dev); repeatable.")] = None,
    eval_analysis: Annotated[list[str] | None, Opt("--eval-analysis", help="Analysis run at each evaluation, NAME[:VALUE], e.g. knn:20newsgroups; repeatable.")] = None,
    select_on: Annotated[str | None, Opt(help="Metric that picks the best checkpoint (default: the first), higher or lower being better as it declares: tasks higher, e.g. alignment-uniformity:split=dev/alignment lower.")] = None,
    save_every: Annotated[int | None, Opt(help="Keep a checkpoint series every n steps: OUT/checkpoints/step-000200 (the step, six digits), ...")] = None,
    save_steps: Annotated[int | None, Opt(help="Write the resume checkpoint every n steps.")] = None,
    seed: Annotated[int | None, Opt(help="Random seed.", min=0, max=SEED_MAX)] = None,
    seeds: Annotated[str | None, Opt("--seeds", help="Train once per seed, e.g. 1-5 or 1,3,7: OUT/seed-N each, and OUT read as one model (mean over seeds) by run and compare.")] = None,
    executor: Annotated[str, Opt("--executor", help="With --seeds: local (one seed after another, here) or slurm (one Slurm array task per seed, through submitit).")] = "local",
    slurm_option: Annotated[list[str] | None, Opt("--slurm-option", help="With --executor slurm: key=value, e.g. timeout_min=120, partition=gpu, gpus_per_job=1, or any sbatch option (account=abc); repeatable.")] = None,
    device: Annotated[str | None, Opt(help="cpu, cuda, cuda:1 (default: CUDA when present).")] = None,
    precision: Annotated[str | None, Opt(help="auto | fp32 | bf16-mixed (autocast) | fp16-mixed (autocast, loss scaled: the BeLLM authors' --fp16) | bf16 (weights in bf16).")] = None,
    gradient_checkpointing: Annotated[bool | None, Opt("--gradient-checkpointing/--no-gradient-checkpointing", help="Recompute activations in backward.")] = None,
    auto_fit: Annotated[bool | None, Opt("--auto-fit/--no-auto-fit", help="A step that would not fit in memory runs as one pass in length buckets with gradient checkpointing where that fits, else is split into more micro-batches (GradCache: the same update), then checkpointing is turned on too; embench says what it chose (default: on).")] = None,
    compile_: Annotated[bool | None, Opt("--compile/--no-compile", help="torch.compile the encoder.")] = None,
    resume: Annotated[bool | None, Opt("--resume", help="Continue from OUT/checkpoint-last.")] = None,
    overwrite: Annotated[bool | None, Opt("--overwrite", help="OUT holds another run: remove its outputs (best/, checkpoints, metrics) and start again (else refused).")] = None,
    tensorboard: Annotated[bool | None, Opt("--tensorboard", help="Also log to OUT/tensorboard.")] = None,
    set_: Annotated[list[str] | None, Opt("--set", help="Any training or method option as key=value (JSON values); repeatable.")] = None,
    quiet: Annotated[bool, Opt("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Train a sentence encoder; keep the best checkpoint as a HF + sentence-transformers folder."""
    overrides = {k: v for k, v in locals().items() if k not in ("show", "config", "set_", "quiet", "seeds", "train_data", "executor", "slurm_option")}
    _check_data_root(data, train_data)
    _check_slurm_options(executor, slurm_option)
    _check_names(method, recipe, pooling)
    overrides["model"] = _one_model(model)
    from rich.markup import escape

    from ...train import Trainer, make_config, resolve
    from ...train.config import parse_override
    from ..output import interrupted, message_console

    overrides.update(compile=overrides.pop("compile_"), data=train_data or None, data_root=overrides.pop("data"), eval_tasks=overrides.pop("eval_task") or None,
                     eval_analyses=overrides.pop("eval_analysis") or None, lora_targets=overrides.pop("lora_target") or None)
    for item in set_ or []:
        key, value = parse_override(item)
        overrides[key] = value
    if quiet:
        overrides["progress"] = False
    cfg = make_config(config, **overrides)
    if show:
        from ...train.configure import given_options

        _show(resolve(cfg), seeds, seed, given_options(config, **overrides))
        return
    err = message_console()
    if seeds is not None or executor != "local":
        _train_seeds(cfg, seeds, seed, err, executor, slurm_option)
        return
    trainer = None
    try:
        trainer = Trainer(cfg)
        result = trainer.fit()
    except KeyboardInterrupt:
        raise interrupted(_interrupted_hint(cfg, trainer, escape)) from None
    if os.environ.get("RANK", "0") != "0":  # under torchrun only the first process reports
        return
    # a task's score x100, as every table prints it; an analysis' number (alignment 0.0004) as it is, named
    from ...train.score_text import is_analysis_metric, score_text

    sel, evaluator = trainer.selection, trainer.evaluator
    analysis = sel is not None and evaluator is not None and is_analysis_metric(sel.metric, [s.key for s in evaluator.analyses])
    named = f" ({sel.metric})" if analysis else ""
    score = (f"{score_text(result.best_score, analysis)}{named} at step {result.best_step}" if result.best_score is not None
             else f"step {result.best_step}")
    before = f" (before training {score_text(result.initial_score, analysis)}{named})" if result.initial_score is not None else ""
    series = f"; series: {len(result.series)} checkpoints in {result.out / 'checkpoints'}" if result.series else ""
    message_console(stderr=False).print(f"kept: {result.best_dir}  {score}{before}; metrics: {result.metrics}{series}", highlight=False)
    if result.footprint is not None:
        err.print(result.footprint.describe(), highlight=False, markup=False)


def _interrupted_hint(cfg, trainer, escape) -> str:
    """What a stopped run leaves to do: continue from its resume checkpoint, or, stopped before the first one was
    written, nothing to continue from (--resume then starts the run again: previous_run.resume_or_start_afresh)."""
    from ...train import checkpoints
    from ...train.previous_run import kept_models

    last = f"{escape(str(cfg.out))}/{checkpoints.RESUME_DIR}"
    if checkpoints.resumable(cfg.out):
        return f"[yellow]interrupted[/]: run the same command with --resume to continue from {last}"
    every = f" (written every {checkpoints.resume_every(trainer.cfg)} steps: --save-steps)" if trainer else ""
    # an evaluation or --save-every may have exported a model first: --resume refuses to remove it
    again = ("--overwrite (removing the checkpoints it kept)" if kept_models(Path(cfg.out)) else
             "--resume (or --overwrite)")
    return (f"[yellow]interrupted[/] before the first resume checkpoint {last}{every}: nothing to continue from; "
            f"the same command with {again} starts the run again")


def _one_model(models: list[str] | None) -> str | None:
    """``--model`` is repeatable in every command; a training run starts from one model, so a second is an error
    rather than silently the one kept."""
    from ...core.errors import EmbenchError

    if models and len(models) > 1:
        raise EmbenchError(f"--model was given {len(models)} times ({', '.join(models)}): a training run starts from one "
                           "model; train each in its own run (--tower2 names JTCSE's second tower, --teacher a "
                           "distillation teacher)")
    return models[0] if models else None


def _check_names(method: str | None, recipe: str | None, pooling: str | None) -> None:
    """Unknown names are reported (with the nearest) before torch and the trainer are imported."""
    from ...models.poolers import POOLERS
    from ...train.methods import METHODS
    from ...train.recipes import RECIPES

    for registry, name in ((METHODS, method), (RECIPES, recipe), (POOLERS, pooling)):
        if name is not None:
            registry.canonical(name)


def _check_slurm_options(executor: str, slurm_option: list[str] | None) -> None:
    """``--slurm-option`` without ``--executor slurm`` is refused, not ignored: forgotten on a login node, every
    seed would train there."""
    from ...core.errors import EmbenchError

    if slurm_option and executor != "slurm":
        raise EmbenchError(f"--slurm-option {', '.join(slurm_option)}: applies only with --executor slurm (without it "
                           "training runs on this machine); add --executor slurm, or drop the --slurm-option values")


def _check_data_root(data: str | None, train_data: list[str] | None) -> None:
    """``--data`` is the data root in every command; training data given there (a keyword or a file) is
    the old spelling of ``--train-data``: say so rather than fail on a folder that is not one."""
    from ...core.errors import EmbenchError

    if data is not None and (data.lower() in TRAIN_KEYWORDS or Path(data).expanduser().is_file()):
        raise EmbenchError(f"--data {data}: --data is the data root (a folder) in every command; training data is "
                           f"--train-data {data}" + (" (repeat it for several)" if train_data else ""))


def _train_seeds(cfg, spec: str | None, seed: int | None, err, executor: str = "local", slurm_option=None) -> None:
    """``--seeds``: one run per seed into OUT/seed-N, listed in OUT/seeds.json; here, or one Slurm array task each."""
    from ...core.errors import EmbenchError
    from ...evaluation.seed_groups import parse_seeds
    from ...report.counts import counted
    from ...train.seeds import train_seeds
    from ..output import interrupted, message_console

    if executor not in ("local", "slurm"):
        raise EmbenchError(f"--executor {executor!r}: choose local or slurm")
    if spec is None:  # --executor slurm alone
        raise EmbenchError("--executor slurm submits one array task per seed: give --seeds (e.g. --seeds 1 for one run); "
                           "for one run over several tasks, put `srun embench train ...` in an sbatch script")
    if seed is not None:
        raise EmbenchError("give either --seed (one run) or --seeds (one run per seed), not both")
    seeds = parse_seeds(spec)
    if executor == "slurm":
        _submit_seeds(cfg, seeds, slurm_option)
        return
    from ...train.score_text import is_analysis_metric, score_text, selected_metric

    analysis = is_analysis_metric(selected_metric(cfg) or "", cfg.eval_analyses or [])  # its number as it is, not x100

    def report(s: int, result, kept) -> None:
        if result is None:
            err.print(f"seed {s}: already trained, kept {kept}")
        else:
            score = score_text(result.best_score, analysis) if result.best_score is not None else "-"
            err.print(f"seed {s}: kept {kept} ({score} at step {result.best_step})", highlight=False)
            if result.footprint is not None:
                err.print(f"seed {s}: {result.footprint.describe()}", highlight=False, markup=False)

    try:
        members = train_seeds(cfg, seeds, on_seed=report)
    except KeyboardInterrupt:
        raise interrupted(f"[yellow]interrupted[/]: finished seeds are kept; run the same command (with --resume) to continue "
                          f"in {cfg.out}") from None
    message_console(stderr=False).print(f"seed group: {cfg.out} ({counted(len(members), 'seed')}: {', '.join(map(str, sorted(members)))}); "
                    f"evaluate it with `embench run --model {cfg.out}`", highlight=False)


def _submit_seeds(cfg, seeds: list[int], slurm_option) -> None:
    from ...grid.slurm import SlurmSettings
    from ...train.seed_jobs import describe
    from ...train.seeds import submit_seeds
    from ..output import message_console

    todo, jobs, held = submit_seeds(cfg, seeds, SlurmSettings.from_options(slurm_option))
    for s, (job, state) in held.items():
        message_console().print(describe(s, job, state, cfg.out), highlight=False, markup=False)
    if not jobs:
        what = "trained already or held by a Slurm job" if held else "trained already"
        message_console(stderr=False).print(f"seed group: {cfg.out}: every seed is {what}; nothing submitted", highlight=False)
        return
    array = str(jobs[0].job_id).split("_")[0]
    message_console(stderr=False).print(
        f"submitted Slurm array {array}: seeds {', '.join(map(str, todo))} -> {cfg.out}/seed-N (logs in {cfg.out}/slurm/); "
        f"once they finish, `embench run --model {cfg.out}` reads the seed group", highlight=False)


def _seed_lines(cfg, spec: str, seed: int | None) -> list[str]:
    """What ``--seeds`` adds to the configuration: each seed's run and folder, and the group they make."""
    from ...core.errors import EmbenchError
    from ...evaluation.seed_groups import parse_seeds
    from ...train.seeds import seed_folders

    if seed is not None:
        raise EmbenchError("give either --seed (one run) or --seeds (one run per seed), not both")
    folders = seed_folders(cfg.out, parse_seeds(spec))
    return [f"seeds: {', '.join(map(str, folders))} (--seeds {spec}): one run each, its seed and folder in place of "
            "seed and out below",
            *(f"  seed {s}: {folder}" for s, folder in folders.items()),
            f"{cfg.out}: the seed group (seeds.json), one model for `embench run -m {cfg.out}` and `embench compare` "
            "(mean and spread over the seeds)"]


def _show(cfg, seeds: str | None = None, seed: int | None = None, given=frozenset()) -> None:
    """The resolved configuration as YAML (a valid --config file), headed by the recipe's citation, where the
    model comes from, and with --seeds the runs it makes (their seed and folder replace ``seed`` and ``out``);
    each option the recipe sets cites its source on its line, each one ``given`` here says so."""
    import sys

    from ...train import RECIPES
    from ...train.annotated_config import LEGEND, annotated_yaml

    if cfg.recipe:
        r = RECIPES.get(cfg.recipe)
        sys.stdout.write(f"# recipe {r.name}: {r.description}\n# follows: {r.cites}\n")
        from ...train.configure import missing_requirements

        for option, why in missing_requirements(cfg).items():
            sys.stdout.write(f"# needs --{option.replace('_', '-')} to run: {why}\n")
        if r.model is not None and cfg.model == r.model:
            sys.stdout.write(f"# model: {r.model}, the paper's (this recipe's default); --model trains another\n")
    if seeds is not None:
        for line in _seed_lines(cfg, seeds, seed):
            sys.stdout.write(f"# {line}\n")
    sys.stdout.write("# batch_size is the GLOBAL batch (all processes x accumulation steps)\n")
    if cfg.recipe or given:
        sys.stdout.write(f"# {LEGEND}\n")
    sys.stdout.write(annotated_yaml(cfg, given))
