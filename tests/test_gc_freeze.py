"""During an encoding pass the garbage collector leaves the process's older objects alone (``core/gc_freeze.py``):
they are frozen while the pass runs and given back after it, nested blocks unfreeze once, and objects made inside a
block are still collected."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

import embench
from embench.core.gc_freeze import older_objects_frozen
from embench.encoding.engine import Engine


class _Node:
    def __init__(self):
        self.other = self  # a reference cycle: only the cyclic collector frees it


def test_the_block_freezes_what_exists_and_gives_it_back_once_the_outermost_block_ends():
    assert gc.get_freeze_count() == 0
    with older_objects_frozen():
        frozen = gc.get_freeze_count()  # every object the collector tracked when the block began
        assert frozen > 0
        with older_objects_frozen():  # a nested block (an analysis calling the engine) changes nothing
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen
    assert gc.get_freeze_count() == 0


def test_a_cycle_made_inside_the_block_is_still_collected():
    with older_objects_frozen():
        node = _Node()
        ref = weakref.ref(node)
        del node
        gc.collect()
        assert ref() is None


def test_an_error_inside_the_block_unfreezes_all_the_same():
    with pytest.raises(ValueError, match="inside"), older_objects_frozen():
        raise ValueError("inside")
    assert gc.get_freeze_count() == 0


def test_threads_share_one_count():
    inside, leave = threading.Event(), threading.Event()

    def hold():
        with older_objects_frozen():
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    inside.wait(10)
    with older_objects_frozen():  # enters and leaves while the other thread's block runs
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() > 0  # the other thread's block still runs
    leave.set()
    t.join()
    assert gc.get_freeze_count() == 0


def test_an_encoding_pass_runs_with_older_objects_frozen(tiny_bert_dir):
    enc = embench.load_model(tiny_bert_dir, device="cpu")
    seen = []
    model = enc.model
    hook = model.register_forward_pre_hook(lambda module, args: seen.append(gc.get_freeze_count()))
    try:
        Engine(enc, cache_dir=None).embed(["a man plays a guitar", "rain"])
    finally:
        hook.remove()
    assert seen and all(n > 0 for n in seen)
    assert gc.get_freeze_count() == 0
