"""Evaluation during training: any task, suite or analysis, every ``--eval-steps``.

``--eval-task`` takes task or suite names, with ``STSBenchmark-dev`` for the STS-B development
split (SimCSE's model selection: "evaluate every 250 steps on STS-B dev, keep the best");
``--eval-analysis`` takes ``NAME[:VALUE]`` or ``NAME:key=value,key=value``, where a bare VALUE sets
the analysis' first option (``knn:20newsgroups`` = kNN accuracy on 20 Newsgroups). Tasks go through
``embench.evaluate`` and analyses through ``embench.analysis.run``: the same code as ``embench run``
and ``embench analyze``. The first metric selects the best checkpoint unless ``select_on`` names
another.

Every metric that can select declares which way it improves (:mod:`embench.core.directions`): a task's
main score (Spearman, accuracy, mteb's main score) is better higher; an analysis declares its scores
with ``@analysis(NAME, scores={"alignment": "lower", ...})``, logged as ``KEY/column`` (mean over the
rows), the first also as ``KEY``. An analysis that declares none is logged (its summary numbers, the
mean of an ``accuracy`` or ``spearman`` column) but cannot select.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.directions import HIGHER
from ..core.errors import EmbenchError
from ..core.random_state import kept_random_state
from ..data.root import DataRoot
from .module import SentenceModel

SPLIT_SUFFIXES = {"-dev": "dev", "-train": "train", "-test": "test"}  # STS-B's splits (stsb_split)
SCORE_COLUMNS = ("accuracy", "spearman", "score", "value")  # logged for analyses that declare no scores
TASK_DIRECTION = HIGHER  # every task's main score: a correlation, an accuracy, mteb's main_score


@dataclass
class EvalSpec:
    key: str  # the metric's name in metrics.jsonl (without the "eval/" prefix)
    target: str  # task/suite or analysis name
    options: dict[str, Any] = field(default_factory=dict)
    scores: dict[str, str] = field(default_factory=dict)  # an analysis' declared column -> direction


def task_specs(names: list[str]) -> list[EvalSpec]:
    from ..tasks.names import resolve_tasks

    specs = []
    for name in names:
        base, split = name, None
        for suffix, value in SPLIT_SUFFIXES.items():
            if name.endswith(suffix):
                base, split = name[: -len(suffix)], value
        if base not in _suites():
            resolved = resolve_tasks(None, [base])[0]  # did-you-mean now, not at the first evaluation
            if split and resolved != ["STSBenchmark"]:  # stsb_split: any other task scored its test set, logged as -dev
                raise EmbenchError(f"--eval-task {name!r}: only STS-B has dev and train splits to score "
                                   f"(STSBenchmark-dev, STSBenchmark-train); give {base!r} for its test set")
        elif split:
            raise EmbenchError(f"--eval-task {name!r}: a split suffix applies to STS-B alone, not to a suite")
        specs.append(EvalSpec(name, base, {"stsb_split": split} if split else {}))
    return specs


def _suites() -> list[str]:
    from ..evaluation.suites import SUITES

    return SUITES.names()


def analysis_specs(items: list[str]) -> list[EvalSpec]:
    from ..analysis.labelled import check_set_names
    from ..analysis.option_values import check_values
    from ..analysis.registry import get
    from ..core.values import parse_value

    specs = []
    for item in items:
        name, _, rest = item.partition(":")
        fn = get(name)  # did-you-mean on a typo
        known = fn.options  # option -> default
        if "=" in rest:
            pairs = [p.partition("=")[::2] for p in rest.split(",")]
        else:  # a bare value sets the first option (knn:20newsgroups -> datasets)
            pairs = [(next(iter(known)), rest)] if rest else []
        options: dict[str, Any] = {}
        for key, raw in pairs:  # typed as `embench analyze --set` types them
            key = key.strip().replace("-", "_")
            if key not in known:
                raise EmbenchError(f"--eval-analysis {item!r}: {name} has no option {key!r}; its options are: {', '.join(known)}")
            options[key] = parse_value(raw.strip(), known[key])
        check_values(name, known, options, where=f"--eval-analysis {item!r}")
        check_set_names(options)
        specs.append(EvalSpec(item, name, options, dict(getattr(fn, "scores", {}))))
    return specs


class Evaluator:
    """Scores the model under training on every eval spec; returns {metric: value}."""

    def __init__(self, tasks: list[str], analyses: list[str], root: DataRoot, out: Path, *, batch_size: int,
                 max_length: int | None, dtype: str):
        self.tasks = task_specs(tasks)
        self.analyses = analysis_specs(analyses)
        self.root, self.out, self.batch_size, self.max_length, self.dtype = root, out, batch_size, max_length, dtype
        if not self.tasks and not self.analyses:
            raise EmbenchError("--eval-steps is set but there is nothing to evaluate (no --eval-task or --eval-analysis)")

    @property
    def metrics(self) -> list[str]:
        return [s.key for s in self.tasks + self.analyses]

    @property
    def directions(self) -> dict[str, str]:
        """Every metric that can select a checkpoint -> the way it improves (``higher`` or ``lower``)."""
        found = {s.key: TASK_DIRECTION for s in self.tasks}
        for s in self.analyses:
            if s.scores:
                found[s.key] = next(iter(s.scores.values()))
                found.update({f"{s.key}/{column}": d for column, d in s.scores.items()})
        return found

    def __call__(self, model: SentenceModel, step: int) -> dict[str, float]:
        from ..models.loader import load_model
        from ..models.max_length import model_max_length

        was_training = model.training
        # untruncated, as the authors evaluate (SimCSE's evaluation.py pads each batch to its longest text):
        # the model's own maximum, not the training length, unless --eval-max-length says otherwise
        max_length = self.max_length or model_max_length(model.encoder.config, model.tokenizer)
        enc = load_model(model.encoder, tokenizer=model.tokenizer, pooling=model.pooling, prompt=model.prompt,
                         max_length=max_length, dtype=self.dtype, device=str(model.device),
                         name=f"training step {step}", fingerprint=f"training-step-{step}")
        try:
            # training's random stream must not depend on its evaluations: mteb seeds every generator with 42 when it
            # builds a task, and `embench train` (no Python caller to restore them) trained another model than
            # embench.train.train of the same config, whose outermost evaluate() restored them
            with kept_random_state():
                scores = {s.key: self._task(enc, s) for s in self.tasks}
                for s in self.analyses:
                    scores.update(self._analysis(enc, s, step))
        finally:
            model.train(was_training)  # the encoder puts the model in eval mode on first use
        return scores

    def _task(self, enc: Any, spec: EvalSpec) -> float:
        from ..api import evaluate

        suite = spec.target if spec.target in _suites() else None
        ev = evaluate(enc, suite, tasks=None if suite else [spec.target], save=False, use_cache=False,
                      data=self.root.path, batch_size=self.batch_size, **spec.options)
        return float(sum(r.main_score for r in ev.records) / len(ev.records))

    def _analysis(self, enc: Any, spec: EvalSpec, step: int) -> dict[str, float]:
        from ..analysis import run

        result = run(spec.target, [enc], self.out / "evals" / f"step-{step:06d}" / spec.target.replace(":", "_"),
                     data=self.root.path, use_cache=False, batch_size=self.batch_size, **spec.options)
        scores = {f"{spec.key}/{k}": float(v) for k, v in result.summary.items() if isinstance(v, (int, float))}
        if spec.scores:
            return {**scores, **_declared_scores(spec, result)}
        for table in result.tables.values():
            column = next((c for c in SCORE_COLUMNS if c in getattr(table, "columns", ())), None)
            if column is not None:
                scores[spec.key] = float(table[column].mean())
                break
        if not scores:
            raise EmbenchError(f"--eval-analysis {spec.key}: the analysis gave no number to log")
        return scores


def _declared_scores(spec: EvalSpec, result: Any) -> dict[str, float]:
    """Each declared score as ``KEY/column``: its summary value, else the mean of the first table column of that
    name; the first declared score is also ``KEY``."""
    found = {}
    for column in spec.scores:
        value = result.summary.get(column)
        if not isinstance(value, (int, float)):
            table = next((t for t in result.tables.values() if column in getattr(t, "columns", ())), None)
            if table is None:
                raise EmbenchError(f"--eval-analysis {spec.key}: {spec.target} declares the score {column!r}, but none of "
                                   f"its tables ({', '.join(result.tables)}) has such a column")
            value = table[column].mean()
        found[f"{spec.key}/{column}"] = float(value)
    return {spec.key: found[f"{spec.key}/{next(iter(spec.scores))}"], **found}
