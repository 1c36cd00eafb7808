"""A record and its items file change together (``ResultStore.save``): Ctrl-C or SIGTERM during either write, or a
full disk under the record, never leaves a record naming items that are missing or not its own. ``--overwrite`` once
replaced the old items, then removed them when the record's write was interrupted: the old record named a missing file,
and ``--ci`` scored its task again without a word. The signal is sent from inside the write, not after a delay."""

from __future__ import annotations

import errno
import signal

import numpy as np
import pytest

from embench.core import signals
from embench.core.signals import terminate_as_interrupt
from embench.evaluation import items as items_module
from embench.evaluation import results as results_module
from embench.evaluation.items import Items
from embench.evaluation.results import Record, ResultStore, read_record, record_key


def _scored(score: float) -> tuple[Record, Items]:
    enc, proto = {"fingerprint": "f", "pooling": "mean"}, {"seed": 1}
    record = Record(task="T", display="T", kind="sts", model="m", main_score=score, scores={"all": {"spearman": score}},
                    protocol=proto, encoder=enc, key=record_key("T", enc, proto))
    return record, Items(kind="correlation", groups=["all"], values=[np.full(4, score)], gold=None, digest="d")


def _stored_pair(store: ResultStore, record: Record) -> tuple[float, float | None]:
    """The stored record's score and the first value of the items it names (None: missing or not its own)."""
    stored = read_record(store.path(record))
    items = store.load_items(stored)
    return stored.main_score, (None if items is None else float(items.values[0][0]))


@pytest.fixture
def signals_as_the_cli_has_them(monkeypatch):
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job may have Ctrl-C ignored
    terminate_as_interrupt()  # conftest puts the test process's SIGTERM handler back
    monkeypatch.setattr(signals, "_TERMINATED", False)  # put back after: a later CLI test would exit 143, not 130
    yield
    signal.signal(signal.SIGINT, before)


@pytest.mark.usefixtures("signals_as_the_cli_has_them")
@pytest.mark.parametrize(("write", "signum"), [(w, s) for w in ("record", "items") for s in (signal.SIGINT, signal.SIGTERM)],
                         ids=lambda v: getattr(v, "name", v))
def test_an_interrupt_while_a_record_is_overwritten_leaves_the_new_record_with_its_own_items(tmp_path, monkeypatch,
                                                                                           write, signum):
    store = ResultStore(tmp_path)
    store.save(*_scored(0.25))
    module, name = (results_module, "write_json") if write == "record" else (items_module, "write_bytes")
    real = getattr(module, name)

    def signalled_then_written(*a, **k):
        signal.raise_signal(signum)
        return real(*a, **k)

    monkeypatch.setattr(module, name, signalled_then_written)
    record, items = _scored(0.5)
    with pytest.raises(KeyboardInterrupt):
        store.save(record, items)
    assert _stored_pair(store, record) == (0.5, 0.5)
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_a_full_disk_under_the_record_keeps_the_old_record_and_its_items(tmp_path, monkeypatch):
    store = ResultStore(tmp_path)
    store.save(*_scored(0.25))

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(results_module, "write_json", full)
    with pytest.raises(OSError, match="No space"):
        store.save(*_scored(0.5))
    assert _stored_pair(store, _scored(0.5)[0]) == (0.25, 0.25)
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["T-" + _scored(0)[0].key + s for s in (".items.npz", ".json")]
