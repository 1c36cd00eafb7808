"""One grid job: load its model once, then evaluate its cells protocol by protocol through
:func:`embench.evaluate` (so its records are exactly those of ``embench run``).

The texts of all cells go through one embedding cache: a text shared by two protocols (or encoded by
an earlier job) is read back, not encoded again. A cell whose task fails is marked failed with the
error and the log, and the job goes on with the others; the exit status says whether any failed.

Run as ``python -m embench.grid.worker JOB.json [--log PATH]`` (the local executor) or through
:class:`embench.grid.slurm.GridJob` (submitit).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..api import evaluate
from ..core.boundary import command_line
from ..core.signals import terminate_as_interrupt, terminated
from ..data.root import DataRoot
from ..evaluation.results import ResultStore, record_key
from ..models.loader import load_model
from ..tasks.recorded_protocol import TASK_KEYS
from .sharded import prefill_sharded
from .state import Cell, GridState, read_json

log = logging.getLogger(__name__)


def _why(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".strip()


def run_job(job_file: Path | str, log_path: str | None = None, slurm_job: str | None = None) -> list[str]:
    """Run one job file; returns the ids of the cells that failed (their markers say why). ``slurm_job``: the Slurm
    id of the array task running it, in its markers (a marker another process wrote outlives that task's end)."""
    job = json.loads(Path(job_file).read_text(encoding="utf-8"))
    results = Path(job["results"])
    state, store = GridState(results), ResultStore(results)
    cells = [Cell.from_dict(c) for c in job["cells"]]
    info = {"job": job["id"], "log": log_path, **({"slurm_job": slurm_job} if slurm_job else {})}
    for c in cells:
        state.mark(c, "running", **info)
    failed: list[str] = []
    print(f"job {job['id']}: {job['model']}, {len(cells)} cell(s)", file=sys.stderr, flush=True)

    def fail(group: Sequence[Cell], e: BaseException) -> None:
        traceback.print_exception(e, file=sys.stderr)
        for c in group:
            if store.find(c.model, c.task, c.key, c.folder) is None:
                state.mark(c, "failed", error=_why(e), **info)
                failed.append(c.id)

    try:
        devices = job.get("devices") or []
        options = {**job["model_options"], **({"device": devices[0]} if len(devices) == 1 else {})}
        encoder = load_model(job["model"], **options)
        desc = encoder.describe()
        changed = [c for c in cells if record_key(c.task, desc, c.protocol) != c.key]
        if changed:  # the checkpoint was rewritten after planning: its records would not be the plan's cells
            raise RuntimeError(f"{job['model']} is not the checkpoint the grid was planned with (its weights or "
                               "settings changed); run `embench grid` again to plan it afresh")
        if len(devices) > 1:
            _prefill(job, cells, encoder)
    except Exception as e:  # an unreadable model fails every cell of its job, with the reason
        fail(cells, e)
        return failed
    for protocol, group in _by_protocol(cells):
        try:
            _evaluate(job, encoder, group, protocol, state)
        except Exception as e:
            if len(group) == 1:
                fail(group, e)
                continue
            # one task's failure must not take its neighbours down: each alone (texts come from the cache)
            print(f"a task of {len(group)} failed ({_why(e)}); running each alone", file=sys.stderr)
            for cell in group:
                if store.find(cell.model, cell.task, cell.key, cell.folder) is not None:
                    continue
                try:
                    _evaluate(job, encoder, [cell], protocol, state)
                except Exception as e1:
                    fail([cell], e1)
    return failed


def mark_unfinished(job_file: Path | str, error: str, log: str | Path | None = None) -> list[str]:
    """Mark every cell of a job that has no record failed with ``error`` (a killed or stopped job's cells say
    why, and a re-run of the grid does them again); returns their ids."""
    job = read_json(Path(job_file)) or {}
    results = Path(job.get("results", "."))
    state, store = GridState(results), ResultStore(results)
    marked = []
    for raw in job.get("cells", []):
        cell = Cell.from_dict(raw)
        if store.find(cell.model, cell.task, cell.key, cell.folder) is None:
            state.mark(cell, "failed", job=job.get("id"), log=str(log) if log else None, error=error)
            marked.append(cell.id)
    return marked


def _by_protocol(cells: Sequence[Cell]) -> list[tuple[dict[str, Any], list[Cell]]]:
    """The cells by the protocol options they run under: a record's ``task_code`` (a plug-in task's code, in its key)
    is the task's, no option of evaluate()."""
    groups: dict[str, tuple[dict[str, Any], list[Cell]]] = {}
    for c in cells:
        options = {k: v for k, v in c.protocol.items() if k not in TASK_KEYS}
        groups.setdefault(json.dumps(options, sort_keys=True), (options, []))[1].append(c)
    return list(groups.values())


def _evaluate(job: dict[str, Any], encoder: Any, group: Sequence[Cell], protocol: dict[str, Any], state: GridState) -> None:
    by_task = {c.task: c for c in group}

    def done(task: str, status: str, record: Any) -> None:
        state.clear(by_task[task])
        print(f"{by_task[task].id} [{by_task[task].label}]: {100 * record.main_score:.2f} ({status})", file=sys.stderr, flush=True)

    evaluate(encoder, tasks=[c.task for c in group], data=job["data"], results_dir=job["results"],
             cache_dir=job["cache_dir"], batch_size=job["batch_size"], on_task=done, **protocol)


def _prefill(job: dict[str, Any], cells: Sequence[Cell], encoder: Any) -> None:
    """Encode every text of the job's cells over its devices first; the evaluations then read the cache."""
    from ..evaluation.protocols import EvalProtocol
    from ..tasks import TASKS

    root = DataRoot.resolve(job["data"])
    texts: list[str] = []
    for protocol, group in _by_protocol(cells):
        proto = EvalProtocol.from_options(**protocol)
        for c in group:
            texts += TASKS.get(c.task).prepare(root, proto).texts
    options = {k: v for k, v in job["model_options"].items() if k != "device"}
    prefill_sharded(job["model"], options, texts, job["devices"], job["cache_dir"], job["batch_size"],
                    expect_cache_keys=[encoder.cache_key()])


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m embench.grid.worker", description="Run one embench grid job.")
    parser.add_argument("job", type=Path)
    parser.add_argument("--log", default=None, help="this job's log file, named in the markers of failed cells")
    args = parser.parse_args(argv)
    ended = command_line()  # a grid's job: its errors in a cell's marker say the options of `embench grid`, not Python's
    try:
        return _run(args)
    finally:
        ended()


def _run(args: Any) -> int:  # main's parsed arguments
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    # a log of what was done, not of progress bars: read by transformers when it is first imported (as in cli.app)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    terminate_as_interrupt()  # a cancelled or timed-out job stops as on Ctrl-C: finished cells and encoded texts kept
    try:
        failed = run_job(args.job, args.log)
    except KeyboardInterrupt:
        print(f"job {args.job.stem}: {'stopped by SIGTERM' if terminated() else 'interrupted'}; finished cells are "
              "stored and its encoded texts cached: the next run of the grid does the rest", file=sys.stderr, flush=True)
        return 143 if terminated() else 130
    if failed:
        print(f"{len(failed)} cell(s) failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
