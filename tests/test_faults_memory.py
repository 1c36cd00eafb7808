"""The host running out of memory (torch's CPU allocator raises a RuntimeError, not a MemoryError) is handled as
a GPU's is: the engine splits the batch and goes on; where it cannot, one line and status 3, never a traceback."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest
import torch

import embench
from embench.core.out_of_memory import is_out_of_memory
from embench.encoding.engine import Engine

# what torch 2.x says when ``ulimit -v`` (or the machine) leaves no memory for a tensor
HOST_OOM = ("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to "
            "allocate 3221225472 bytes. Error code 12 (Cannot allocate memory)")
TEXTS = ["A man is playing a guitar.", "A woman slices an onion.", "x", "Two dogs run through a field.",
         "Short one.", "Kids play football in the park.", "", "A very long sentence " * 10]


def test_the_cpu_allocators_error_is_an_out_of_memory_of_the_host():
    from embench.core.out_of_memory import is_host_out_of_memory

    assert is_out_of_memory(RuntimeError(HOST_OOM)) and is_host_out_of_memory(RuntimeError(HOST_OOM))
    assert is_host_out_of_memory(MemoryError())
    assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory")) and not is_host_out_of_memory(torch.OutOfMemoryError("CUDA out of memory"))
    assert not is_out_of_memory(RuntimeError("shape mismatch"))


def test_a_host_out_of_memory_is_one_line_with_status_3(monkeypatch, capsys):
    cli = importlib.import_module("embench.cli.app")

    def boom(**kwargs):
        raise RuntimeError(HOST_OOM)

    monkeypatch.setattr(cli, "app", boom)
    monkeypatch.setattr(sys, "argv", ["embench", "run", "--model", "m"])
    with pytest.raises(SystemExit) as done:
        cli.main()
    err = capsys.readouterr().err
    assert done.value.code == 3 and "Traceback" not in err and err.count("\n") == 1
    assert err.startswith("error: out of the host's memory (") and "--batch-tokens" in err


@pytest.mark.slow  # a model loaded and encoded twice
def test_a_batch_the_host_cannot_hold_is_split_and_the_run_goes_on(tiny_bert_dir, monkeypatch):
    enc = embench.load_model(tiny_bert_dir, device="cpu", pooling="mean")
    reference = Engine(enc, cache_dir=None).embed(TEXTS)
    real = type(enc).encode_views

    def small_host(self, texts, views, enc_=None, **kw):
        if len(texts) > 2:
            raise RuntimeError(HOST_OOM)
        return real(self, texts, views, enc_, **kw)

    monkeypatch.setattr(type(enc), "encode_views", small_host)
    engine = Engine(enc, cache_dir=None)
    with pytest.warns(UserWarning, match="out of host memory at a batch of 8 texts"):
        out = engine.embed(TEXTS)
    np.testing.assert_allclose(out, reference, atol=1e-5)
    assert engine.stats["oom_splits"] >= 3


@pytest.mark.slow  # a model loaded
def test_one_text_the_host_cannot_hold_is_an_error_with_status_3(tiny_bert_dir, monkeypatch):
    from embench.core.errors import EmbenchError

    enc = embench.load_model(tiny_bert_dir, device="cpu", pooling="mean")

    def no_memory(self, texts, views, enc_=None, **kw):
        raise RuntimeError(HOST_OOM)

    monkeypatch.setattr(type(enc), "encode_views", no_memory)
    with pytest.warns(UserWarning), pytest.raises(EmbenchError, match="out of host memory .* encoding one text") as e:
        Engine(enc, cache_dir=None).embed(["one", "two"])
    assert e.value.exit_status == 3
