"""A checkpoint loaded by name and then changed in memory is keyed by its weights as they are, not by its files."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import embench

TEXTS = ["A man is playing a guitar.", "Short.", "The quick brown fox jumps over the lazy dog."]


@pytest.mark.slow
def test_a_loaded_checkpoint_s_weights_changed_in_memory_get_another_key(tiny_bert_dir, tmp_path, monkeypatch):
    """load_model(folder) fixed its fingerprint at load (the files'): after ``enc.model``'s parameters were changed in
    place its old vectors came back from the cache and its old records from the results. Unchanged, the key stays
    the files' (caches made before stay valid) and nothing is hashed; changed, the weights are hashed once."""
    import embench.models.live_fingerprint as live

    enc = embench.load_model(tiny_bert_dir, pooling="mean")
    files = enc.fingerprint
    before, key = enc.encode(TEXTS, cache_dir=tmp_path), enc.cache_key()  # loads the weights
    hashed = []
    real = live.module_fingerprint
    monkeypatch.setattr(live, "module_fingerprint", lambda *a: hashed.append(1) or real(*a))
    again = embench.load_model(tiny_bert_dir, pooling="mean")
    assert (enc.fingerprint, enc.cache_key()) == (files, key) == (again.fingerprint, again.cache_key()) and not hashed
    view = enc.view(layer=1)
    with torch.no_grad():
        for p in enc.model.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    assert enc.fingerprint != files and enc.cache_key() != key and len(hashed) == 1
    assert view.fingerprint == enc.fingerprint == enc.describe()["fingerprint"] and len(hashed) == 1
    after = enc.encode(TEXTS, cache_dir=tmp_path)
    assert not np.allclose(after, before) and np.allclose(after, enc.encode(TEXTS, use_cache=False), atol=1e-6)
    edited = enc.fingerprint
    enc.model.load_state_dict(again.model.state_dict())  # back to the files' weights: hashed, keyed by them again
    assert enc.fingerprint not in (edited, files) and np.allclose(enc.encode(TEXTS, cache_dir=tmp_path), before, atol=1e-6)
    enc.model.embeddings.word_embeddings.weight = torch.nn.Parameter(torch.zeros_like(enc.model.embeddings.word_embeddings.weight))
    assert enc.fingerprint != files and len(hashed) == 3  # a parameter replaced, not written: another object


@pytest.mark.slow
def test_an_edited_checkpoint_is_not_served_its_stored_record(tiny_bert_dir, data_root, tmp_path, one_thread):
    """evaluate() keys its records and cache by the encoder's fingerprint: the record of the weights before the
    edit is not the edited model's, nor are their cached vectors."""
    rows = [(f"a {w} sits on the mat {i}", f"the {w} plays {i}", f"{i % 5}.{i % 7}") for i in range(12) for w in ("cat",)]
    (tmp_path / "pairs.tsv").write_text("s1\ts2\tscore\n" + "".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    task = tmp_path / "task.yaml"
    task.write_text("name: edited-sts\nkind: pairs\nfiles:\n  test: pairs.tsv\ncolumns:\n  sentence1: s1\n"
                    "  sentence2: s2\nscore_range: [0, 5]\n", encoding="utf-8")
    enc = embench.load_model(tiny_bert_dir)
    kw = dict(task_files=[task], data=data_root, results_dir=tmp_path / "r", cache_dir=tmp_path / "c", progress=False)
    first = embench.evaluate(enc, **kw)
    assert list(embench.evaluate(enc, **kw).status.values()) == ["stored"]  # unchanged: its record reused
    with torch.no_grad():
        for p in enc.model.parameters():
            p.mul_(1.5)
    second = embench.evaluate(enc, **kw)
    assert list(second.status.values()) == ["computed"] and second.encode_stats["from_cache"] == 0
    assert second.records[0].main_score != first.records[0].main_score


@pytest.mark.slow
def test_weights_loaded_inside_inference_mode_still_show_an_edit(tiny_bert_dir, monkeypatch):
    """On a GPU the weights are cast (``weights_cast``) and moved when encode_views, under torch.inference_mode, first
    asks for them: they became inference tensors, recorded without a version, and a later ``param.mul_()`` under
    no_grad (which such a Parameter accepts) kept the files' key: the old vectors were served for the new weights."""
    from embench.models.encoder import HFEncoder

    monkeypatch.setattr(HFEncoder, "weights_cast", property(lambda self: True))  # the GPU's line, on the CPU
    enc = embench.load_model(tiny_bert_dir, pooling="mean", dtype="bf16")
    with torch.inference_mode():
        enc.encode(TEXTS[:1], use_cache=False)
    p = enc.model.embeddings.word_embeddings.weight
    assert p.dtype == torch.bfloat16 and not p.is_inference()
    key = enc.cache_key()
    with torch.no_grad():
        p.mul_(1.5)
    assert enc.cache_key() != key


def test_weights_written_inside_inference_mode_are_seen():
    """A module cast under torch.inference_mode holds inference tensors, and a write to them inside it bumps no
    version counter: the fingerprint, which followed only the counters, kept the weights' old hash."""
    from embench.models.live_fingerprint import CheckpointFingerprint, WeightsFingerprint

    module = torch.nn.Linear(3, 2)
    live, checkpoint = WeightsFingerprint(module), CheckpointFingerprint("files")
    checkpoint.loaded(module)
    with torch.inference_mode():
        module.to(torch.float64)
    cast, cast_key = live(), checkpoint()
    with torch.inference_mode():
        module.weight.mul_(2)
    assert live() != cast and checkpoint() != cast_key
