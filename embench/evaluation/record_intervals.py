"""The intervals :func:`embench.evaluate` adds with ``ci``: every record's, kept in the record, and ``Avg.``'s."""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor

from .evaluation_view import Evaluation
from .results import ResultStore
from .significance import IntervalSettings, average_interval, distributions, interval_entry

log = logging.getLogger(__name__)


def add_intervals(result: Evaluation, settings: IntervalSettings, store: ResultStore | None) -> None:
    """Every record's interval (kept in the record with its settings), and each row's Avg. from its own records'
    replicates: a run of several ``truncate_dim``/``quantize`` rows holds several rows in one result."""
    result.interval_settings = settings
    with_items = [(r, result.items[(r.model, r.task)]) for r in result.records if (r.model, r.task) in result.items]
    # tasks are independent and numpy releases the GIL in the bootstrap's array passes: one thread per core
    with ThreadPoolExecutor(max_workers=max(1, min(len(with_items), os.cpu_count() or 1))) as pool:
        all_dists = list(pool.map(lambda ri: distributions([ri[0]], [ri[1]], settings)[0], with_items))
    not_kept: list[str] = []  # stored records the run only read, whose new interval could not be added to them
    rows: dict[str, list] = {}  # a row's (model, dim, precision) own replicates: its Avg. pools no other row's
    for (r, items), dist in zip(with_items, all_dists, strict=True):
        rows.setdefault(r.model, []).append(dist)
        entry = interval_entry(r, items, dist, settings)
        result.intervals[(r.model, r.display)] = (entry["low"], entry["high"])
        if r.ci != entry:
            r.ci = entry
            if store is not None:
                try:
                    store.save(r)
                except OSError as e:  # the interval is still shown; only keeping it in the record failed
                    # the record's name, not the temporary one the OSError carries (core/atomic.py)
                    why = f"{store.path(r)}: {e.strerror or e}"
                    if result.status.get(result.key(r)) == "stored":  # only read: nothing the run made is lost
                        not_kept.append(why)
                    else:
                        result.unsaved.setdefault(result.key(r), why)
    for model, dists in rows.items():  # Avg. only where every task of the row has one (none is left out silently)
        if len(dists) == sum(r.model == model for r in result.records):
            result.intervals[(model, "Avg.")] = average_interval(dists, settings.level)
    if not_kept:  # a warning, not a failure: the scores were stored before, the interval is printed and computed again
        more = f" (and {len(not_kept) - 1} more stored record(s))" if len(not_kept) > 1 else ""
        log.warning("could not add the interval to the stored record %s%s; the record stays as it was, the interval "
                    "is printed, and the next --ci run computes it again", not_kept[0], more)
