"""What Slurm says of jobs now: sacct (the accounting database, ended jobs included), and squeue (the controller)
for every job sacct cannot say: no slurmdbd, one that is down, accounting turned off, or a job not recorded yet.

A job neither answers for (no Slurm commands on this machine, no controller reachable) is ``UNKNOWN``, never taken
for ended: its cells may still be held by a job that is pending or running, and submitting them again would run
them twice. One call of each command covers every job asked about.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable

# sacct's states of a job that still holds its cells (https://slurm.schedmd.com/sacct.html#SECTION_JOB-STATE-CODES)
ACTIVE = frozenset({"PENDING", "RUNNING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SUSPENDED",
                    "COMPLETING", "CONFIGURING", "SIGNALING", "STAGE_OUT"})
UNKNOWN = "UNKNOWN"  # neither sacct nor squeue answered
ENDED = "ENDED"  # squeue no longer lists it (nor sacct, or sacct cannot answer): it ended, how is not known
ASK_TIMEOUT_S = 30  # a command silent this long does not answer (squeue retries a missing SLURM_CONF for 60 s)

# a pending array's tasks in one line: "12_[1-3,7%2]"
_RANGE = re.compile(r"^(?P<job>\d+)_\[(?P<tasks>[^\]%]*)(?:%\d+)?\]$")


def job_states(job_ids: Iterable[str]) -> dict[str, str]:
    """Slurm id (``12``, or ``12_3`` for an array task) -> its state now: sacct's word (PENDING, RUNNING, COMPLETED,
    CANCELLED, TIMEOUT, ...), squeue's where sacct cannot say, ``ENDED`` for a job squeue no longer lists and sacct
    cannot say how it ended, ``UNKNOWN`` where neither answers."""
    ids = sorted(set(job_ids))
    if not ids:
        return {}
    arrays = sorted({i.split("_")[0] for i in ids})  # an array's id gives all its tasks
    known = _ask(["sacct", "-X", "--parsable2", "--noheader", "-o", "JobID,State", "-j", ",".join(arrays)]) or {}
    left = [i for i in ids if i not in known]
    if left:
        queued = _ask(["squeue", "--noheader", "--array", "--states=all", "--format=%i|%T",
                       "--jobs", ",".join(sorted({i.split("_")[0] for i in left}))])
        if queued is not None:
            known.update({i: queued.get(i, ENDED) for i in left})
    return {i: known.get(i, UNKNOWN) for i in ids}


def _ask(command: list[str]) -> dict[str, str] | None:
    """The states one command lists; None when it cannot answer (missing, failing, silent past the timeout)."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=ASK_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        # squeue's answer when none of the jobs is known to the controller any more: an answer, listing nothing
        return {} if command[0] == "squeue" and "Invalid job id" in done.stderr else None
    return read_states(done.stdout)


def read_states(text: str) -> dict[str, str]:
    """``JobID|State`` lines -> id -> the state's first word ("CANCELLED by 0" -> CANCELLED); a pending array's
    range (``12_[1-3%2]``) gives each of its tasks not listed on a line of its own; job steps (``12_0.batch``) are
    not jobs."""
    out: dict[str, str] = {}
    ranges: dict[str, str] = {}
    for line in text.splitlines():
        job, sep, state = line.strip().partition("|")
        if not sep or not job or "." in job or not state.split():
            continue
        word = state.split()[0].upper()
        ranged = _RANGE.match(job)
        if ranged is None:
            out[job] = word
            continue
        for part in filter(None, ranged["tasks"].split(",")):
            first, _, last = part.partition("-")
            if first.isdigit() and (last or first).isdigit():
                ranges.update({f"{ranged['job']}_{t}": word for t in range(int(first), int(last or first) + 1)})
    # a range is the array's remainder that never started ("9_[0-1%1]|CANCELLED by 0" once it is cancelled); sacct
    # may still name in it a task that did start, on its own line with that task's own end (9_0|COMPLETED)
    return {**ranges, **out}
