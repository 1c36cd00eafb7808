"""A read-only or full results folder: errors name the record file (never the temporary one a write used); an
interval that cannot be added to a stored record the run only read is a warning, not a failure; a failed record
write leaves no items file without its record; temporary files a killed run left are swept."""

from __future__ import annotations

import errno
import logging
import os
import time

import numpy as np
import pytest

from embench.evaluation import results as results_module
from embench.evaluation.evaluation_view import Evaluation
from embench.evaluation.items import Items
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.record_intervals import add_intervals
from embench.evaluation.results import Record, ResultStore, record_key
from embench.evaluation.significance import IntervalSettings


def _scored(task: str = "STS12") -> tuple[Record, Items]:
    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 5, 60)
    sims = gold / 5 + rng.normal(0, 0.3, 60)
    rho = float(np.corrcoef(sims.argsort().argsort(), gold.argsort().argsort())[0, 1])  # Spearman's (no ties)
    enc, proto = {"fingerprint": "f", "pooling": "mean"}, EvalProtocol().to_dict()
    record = Record(task=task, display=task, kind="sts", model="m", main_score=rho,
                    scores={"all": {"spearman": rho}}, protocol=proto, encoder=enc, key=record_key(task, enc, proto))
    return record, Items(kind="correlation", groups=["a"], values=[sims], gold=[gold], digest="d")


def _read_only(monkeypatch):
    """Root writes into a read-only folder (CI runs as root): the refusal is injected where every write renames."""
    def refuse(src, dst):
        raise OSError(errno.EROFS, "Read-only file system", str(src))

    monkeypatch.setattr(os, "replace", refuse)


@pytest.mark.parametrize("status", ["stored", "computed"])
def test_an_interval_that_cannot_be_kept_names_the_record_and_fails_only_what_the_run_made(tmp_path, monkeypatch, caplog, status):
    store = ResultStore(tmp_path)
    record, items = _scored()
    path = store.save(record, items)
    before = path.read_bytes()
    result = Evaluation(records=[record])
    result.items[(record.model, record.task)] = items
    result.status[result.key(record)] = status
    _read_only(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="embench"):
        add_intervals(result, IntervalSettings.parse(95, 200, 1), store)
    assert result.intervals[("m", "STS12")][0] < record.main_score < result.intervals[("m", "STS12")][1]  # shown
    said = [r.getMessage() for r in caplog.records if "could not add the interval" in r.getMessage()]
    if status == "stored":  # only read by this run: its score was kept before; a warning, the run succeeds
        assert result.unsaved == {} and len(said) == 1 and f"{path}: Read-only file system" in said[0]
    else:  # made by this run: not kept, said as such
        assert result.unsaved == {"STS12": f"{path}: Read-only file system"} and not said
    assert path.read_bytes() == before and ".tmp" not in " ".join([*said, *result.unsaved.values()])
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, store.items_path(record).name])


def test_a_record_that_cannot_be_written_leaves_no_items_file(tmp_path, monkeypatch):
    store = ResultStore(tmp_path)
    record, items = _scored()

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(results_module, "write_json", full)
    with pytest.raises(OSError, match="No space"):
        store.save(record, items)
    assert list(tmp_path.rglob("*")) == [tmp_path / "m"]  # neither the items nor a temporary file


def test_temporary_files_a_killed_run_left_are_swept_when_a_run_writes_there(tmp_path):
    store = ResultStore(tmp_path)
    record, _ = _scored()
    path = store.save(record)
    stale = path.with_name(f".{path.name}.host-1-0badc0de.tmp")
    fresh = path.with_name(f".{path.name}.host-2-0goodc0de.tmp")  # another writer's, renamed in a moment
    for p in (stale, fresh):
        p.write_text("{ half a rec")
    past = time.time() - 11 * 60
    os.utime(stale, (past, past))
    store.check_writable()
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, fresh.name])


@pytest.mark.slow  # a task's data read and scored
def test_a_record_that_cannot_be_saved_is_named_by_its_own_file(tmp_path, data_root, monkeypatch):
    import embench

    class Random:  # any vectors: the score is kept in memory, the save fails
        fingerprint = "random-4"

        def encode(self, texts, **kw):
            return np.random.default_rng(len(texts)).standard_normal((len(texts), 4)).astype(np.float32)

    def full(self, record, items=None):  # as atomic_file fails: the OSError names the temporary file
        raise OSError(errno.ENOSPC, "No space left on device", str(self.path(record).with_name(".x.json.h-1-ab.tmp")))

    monkeypatch.setattr(ResultStore, "save", full)
    ev = embench.evaluate(Random(), tasks=["STS12"], data=data_root, results_dir=tmp_path, progress=False, use_cache=False)
    record = ev.records[0]
    assert ev.unsaved == {"STS12": f"{ResultStore(tmp_path).path(record)}: No space left on device"}
