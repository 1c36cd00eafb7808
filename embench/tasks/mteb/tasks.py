"""MTEB tasks through the installed ``mteb`` package: its task objects, evaluators, metrics and main scores.

Each task is registered as ``MTEB:<mteb name>`` (``MTEB:STS12``, ``MTEB:SICK-R``, ...), so it never
collides with embench's own STS tasks. ``prepare`` builds mteb's task object, fills its data from
the data root (:mod:`embench.tasks.mteb.load`) instead of the hub, and ``score`` runs ``mteb.evaluate``
with an encoder that asks embench's engine for vectors (:mod:`embench.tasks.mteb.adapter`). Nothing of
mteb's scoring is re-implemented; the record keeps mteb's own result (``scores["mteb_result"]``) so
it can be written in mteb's result format (``embench mteb export``).

Any other mteb task works by name (``--task MTEB:ArguAna``): from a local copy of its hub dataset
in ``<data root>/mteb/<name>/`` or from the hub where it is reachable. An unknown name lists the
nearest mteb task names.

mteb is imported inside functions only, so ``import embench`` stays fast.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...core.errors import EmbenchError, UnknownNameError
from ...core.registry import nearest
from ...data.root import DataRoot
from ...evaluation.protocols import EvalProtocol
from ...evaluation.suites import MTEB_LITE
from ...evaluation.suites import MTEB_PREFIX as PREFIX
from ..base import TASKS, Embed, Prepared, TaskScore
from ..senteval.datasets import TRANSFER_DATASETS
from ..sts.datasets import STS_DATASETS
from .adapter import MTEB_SEED, EngineEncoder, main_score_reads_similarity
from .load import load_into, local_copy, task_kind
from .local_data import LOCAL

# the column names of embench's own tasks, which an mteb task's must not take (MTEBTask.display)
NATIVE_DISPLAYS = frozenset({d.display or d.name for d in STS_DATASETS} | {d.display for d in TRANSFER_DATASETS})


@dataclass
class MTEBTask:
    """One mteb task, run with mteb's evaluator on the data root's copy of its data.

    ``limit`` keeps only the first items of the data (tests, quick looks); the record says so.
    """

    mteb_name: str
    limit: int | None = None
    kind: str = "mteb"
    name: str = ""
    default_seed: int = MTEB_SEED  # the seed run when none is given (tasks/recorded_protocol.py: seeded_protocol)
    _differs: bool | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.name = self.name or PREFIX + self.mteb_name

    @property
    def display(self) -> str:
        """The mteb name, with ``*`` when the local data differs from MTEB's copy (the record says how); the task's
        own name (``MTEB:SICK-R``) where the mteb name is also one of embench's tasks: the two score other pairs
        (MTEB's SICK-R all 9,927, SentEval's the 4,927 of its test split), and under one column name a table of both
        (``embench results show`` over a folder holding sts-all and mteb-lite) kept one score and dropped the other."""
        differs = self._differs
        if differs is None:
            spec = LOCAL.get(self.mteb_name)
            differs = bool(spec and spec.notes) or self.limit is not None
        # the name is tested before the data note is added: STS16's "STS16*" is no column of embench's, yet the
        # column was SentEval's name with a star beside SentEval's own, where the README promises MTEB:STS16(*)
        shown = self.name if taken_by_another_task(self.mteb_name) else self.mteb_name
        return shown + ("*" if differs else "")

    def data_files(self, root: DataRoot) -> list[Path]:
        if self.mteb_name in LOCAL:
            return [root.path / rel for rel in LOCAL[self.mteb_name].files]
        copy = local_copy(root, self.mteb_name)
        return sorted(p for p in copy.rglob("*") if p.is_file()) if copy else []

    def mteb_task(self, seed: int = MTEB_SEED) -> Any:
        """A fresh mteb task object (its data is filled per run)."""
        import mteb

        task = mteb.get_task(self.mteb_name)
        return task if seed == task.seed else type(task)(seed=seed)

    def similarity(self, asked: str) -> str:
        """The similarity mteb is given: the one asked where mteb's main score of this task uses the model's similarity
        (retrieval, reranking...), else cosine (STS's main score is its cosine Spearman whatever the model's: under
        ``--similarity dot`` a record said dot of the cosine score)."""
        if asked == "cosine":  # either way: mteb is not imported to know it (grid plans, a default run's keys)
            return asked
        from mteb.get_tasks import _TASKS_REGISTRY

        metadata = _TASKS_REGISTRY[self.mteb_name].metadata  # the task class's: no task object, none of its notes
        return asked if main_score_reads_similarity(metadata) else "cosine"

    def recorded_protocol(self, protocol: EvalProtocol) -> EvalProtocol:
        """The protocol this task's record names: the similarity and seed mteb is given, every other axis at its default
        (mteb reads none of them: ``--correlation pearson`` keyed a second record of one result, and said it was used)."""
        kept = EvalProtocol(similarity=self.similarity(protocol.similarity), seed=protocol.seed)
        if kept.similarity != protocol.similarity:
            warnings.warn(f"--similarity {protocol.similarity}: mteb's main score of {self.mteb_name} does not use the "
                          f"model's similarity; its record names {kept.similarity}", stacklevel=2)
        if ignored := [f"--{k.replace('_', '-')} {v}" for k, v in protocol.to_dict().items()
                       if k != "similarity" and v != getattr(kept, k)]:
            warnings.warn(f"{', '.join(ignored)}: MTEB tasks are scored by mteb, which takes only the similarity and the "
                          "seed; their records keep the defaults", stacklevel=2)
        return kept

    def stored_problem(self, record: Any, root: DataRoot) -> str | None:
        """Why a stored record must not be reused: before embench read an unset seed as mteb's 42 (``seeded_protocol``),
        every seed equal to the protocol's default, 1111, was run as 42, and the record said 1111 (its provenance says
        what ran): such a record is not the result of a run asked for seed 1111."""
        ran = (record.provenance.get("task_meta") or {}).get("seed")
        named = record.protocol.get("seed")
        if ran is not None and ran != named:
            return f"it names seed {named}, but mteb ran with seed {ran}"
        return None

    def prepare(self, root: DataRoot, protocol: EvalProtocol) -> Prepared:
        """mteb's task with its data from ``root``, seeded by ``protocol.seed`` (the seed it runs under: mteb's own,
        42, unless one was given, as :func:`embench.tasks.recorded_protocol.seeded_protocol` sets it)."""
        seed = protocol.seed
        task = self.mteb_task(seed)
        files, meta, texts = load_into(task, root, self.limit)
        self._differs = bool(meta["data_differences"])
        meta.update({
            "mteb_task": task.metadata.name,
            "mteb_type": task.metadata.type,
            "mteb_kind": task_kind(task),
            "mteb_main_score": task.metadata.main_score,
            "mteb_dataset": dict(task.metadata.dataset),
            "eval_splits": list(task.eval_splits),
            "seed": seed,
            "limit": self.limit,
        })

        scored = replace(protocol, similarity=self.similarity(protocol.similarity))  # the one its record names

        def score(embed: Embed) -> TaskScore:
            return run_mteb(task, embed, scored, meta)

        return Prepared(texts=texts, files=files, score=score, meta=meta)


def run_mteb(task: Any, embed: Embed, protocol: EvalProtocol, meta: dict[str, Any]) -> TaskScore:
    """Run ``mteb.evaluate`` on a loaded task with the engine-backed encoder; mteb's scores, as a TaskScore."""
    import mteb

    encoder = EngineEncoder(embed, similarity=protocol.similarity)
    with superseded_note_hidden():
        result = mteb.evaluate(
            encoder, task, cache=None, overwrite_strategy="always", show_progress_bar=False,
            co2_tracker=False, encode_kwargs={"batch_size": 4096, "show_progress_bar": False},
        )
    if result.exceptions:
        raise EmbenchError(f"mteb could not evaluate {task.metadata.name}: {result.exceptions[0].exception}")
    task_result = result.task_results[0]
    main = float(task_result.get_score())
    split = task.eval_splits[0]
    first = task_result.scores[split][0]
    flat = {k: v for k, v in first.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    scores = {
        **flat,
        "main_score_name": task.metadata.main_score,
        "mteb_type": task.metadata.type,
        "split": split,
        "data_differences": list(meta["data_differences"]),
        # mteb's own result, JSON-safe (its date is a datetime); TaskResult.from_dict reads it back
        "mteb_result": json.loads(json.dumps(task_result.to_dict(), default=str)),
    }
    return TaskScore(main=main, scores=scores, meta={"texts_requested_by_mteb": encoder.texts_requested})


@contextmanager
def superseded_note_hidden() -> Iterator[None]:
    """mteb's "is superseded by .v2" note, hidden for the call: embench runs the task versions the leaderboard published.
    ``mteb.evaluate`` says it as a warning and as a WARNING line of its task logger (printed under ``-q`` too)."""
    logger = logging.getLogger("mteb.abstasks.abstask")

    def keep(record: logging.LogRecord) -> bool:
        return "is superseded by" not in record.getMessage()

    logger.addFilter(keep)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*is superseded by.*")
            yield
    finally:
        logger.removeFilter(keep)


def resolve(name: str) -> str | None:
    """Register ``MTEB:<any mteb task>`` on first use; an unknown mteb name lists the nearest ones."""
    if not name.upper().startswith(PREFIX.upper()):
        return None
    bare = name[len(PREFIX):]
    known = mteb_task_names()
    lowered = {n.lower(): n for n in known}
    if bare.lower() not in lowered:
        raise UnknownNameError("mteb task", name, [PREFIX + n for n in MTEB_LITE],
                               [PREFIX + n for n in nearest(bare, known, n=5)])
    canonical = PREFIX + lowered[bare.lower()]
    if canonical not in TASKS:
        TASKS.add(canonical, MTEBTask(lowered[bare.lower()]))
    return canonical


def taken_by_another_task(name: str) -> bool:
    """Whether ``name`` is the column of a task that is not mteb's: one of embench's own, or the name or display of a
    task file or plug-in task registered in this process (a task file named Banking77Classification shared the
    column of MTEB:Banking77Classification, and a table kept one of the two scores)."""
    from ..task_file import REGISTERED

    if name in NATIVE_DISPLAYS or any(name in (t.name, t.display) for t in REGISTERED.values()):
        return True
    # a plug-in task's name, known without importing it (a built-in task's name that is not its column, STSBenchmark
    # beside STS-B, takes nothing from mteb's)
    return name in TASKS and TASKS.plugin(name) is not None


_NAMES: list[str] = []


def mteb_task_names() -> list[str]:
    """Every task name the installed mteb knows (read once)."""
    if not _NAMES:
        from mteb.get_tasks import _TASKS_REGISTRY  # name -> task class; instantiating every task is slow

        _NAMES.extend(sorted(_TASKS_REGISTRY))
    return _NAMES


MTEB_TASKS = {name: MTEBTask(name) for name in MTEB_LITE}  # the registry's lazy entries point here
