"""The intervals :func:`embench.evaluate` adds with ``ci``: every record's, kept in the record, and ``Avg.``'s."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from .evaluation_view import Evaluation
from .results import ResultStore
from .significance import IntervalSettings, average_interval, distributions, interval_entry


def add_intervals(result: Evaluation, settings: IntervalSettings, store: ResultStore | None) -> None:
    """Every record's interval (kept in the record with its settings), and Avg.'s from the same replicates."""
    result.interval_settings = settings
    with_items = [(r, result.items[(r.model, r.task)]) for r in result.records if (r.model, r.task) in result.items]
    # tasks are independent and numpy releases the GIL in the bootstrap's array passes: one thread per core
    with ThreadPoolExecutor(max_workers=max(1, min(len(with_items), os.cpu_count() or 1))) as pool:
        all_dists = list(pool.map(lambda ri: distributions([ri[0]], [ri[1]], settings)[0], with_items))
    dists = []
    for (r, items), dist in zip(with_items, all_dists, strict=True):
        dists.append(dist)
        entry = interval_entry(r, items, dist, settings)
        result.intervals[(r.model, r.display)] = (entry["low"], entry["high"])
        if r.ci != entry:
            r.ci = entry
            if store is not None:
                try:
                    store.save(r)
                except OSError as e:  # the interval is still shown; only keeping it in the record failed
                    result.unsaved[result.key(r)] = f"{e.filename or store.path(r)}: {e.strerror or e}"
    if result.records and len(dists) == len(result.records):
        result.intervals[(result.records[0].model, "Avg.")] = average_interval(dists, settings.level)
