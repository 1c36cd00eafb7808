"""benchmarks/recipes_gpu.py (issue 31's GPU report) on tiny shapes on the CPU, and the trainer pieces its numbers
rest on: from-scratch models built where and in the dtype they train, one shuffle per epoch."""

from __future__ import annotations

import json
import math
import random

import pytest
import torch


@pytest.fixture(scope="module")
def recipes_gpu(benchmark_script):
    return benchmark_script("recipes_gpu")


@pytest.mark.slow
def test_tiny_run_gives_a_finite_row_per_recipe_and_a_report_naming_each(recipes_gpu, data_root, minilm_path, tmp_path,
                                                                          one_thread):
    out = tmp_path / "rg"
    report = recipes_gpu.main(["--tiny", "--device", "cpu", "--recipes", "simcse-unsup,bellm", "--data", str(data_root),
                               "--tokenizer", str(minilm_path), "--profile", "bellm", "--lora-peer-batches", "4", "--out", str(out)])
    saved = json.loads((out / "recipes_gpu.json").read_text())
    profiled = (out / "profile-bellm.txt").read_text()  # its measured step under torch.profiler, and only its
    assert profiled.startswith("steps 1-1") and "aten::mm" in profiled and not (out / "profile-simcse-unsup.txt").exists()
    assert [r["recipe"] for r in saved["rows"]] == ["simcse-unsup", "bellm"] == [r["recipe"] for r in report["rows"]]
    for row in saved["rows"]:
        assert row["status"] == "ok", row
        for key in ("steps_per_s", "tokens_per_s", "mfu", "recipe_hours", "last_loss"):
            assert math.isfinite(row[key]) and row[key] > 0, (row["recipe"], key, row[key])
        assert row["fit"]["micro_batches"] in (1, None)  # what train_config.json says (null where it says nothing)
    bellm = saved["rows"][1]
    assert (bellm["model"]["model_type"], bellm["lora_r"], bellm["load_kbit"]) == ("llama", 32, 0)
    assert "bitsandbytes" in bellm["kbit_note"]  # QLoRA is measured on CUDA: said, and LoRA over unquantised weights here
    assert saved["rows"][0]["paper_recipe_steps"] == 10**6 // 64  # Wiki1M at batch 64, one epoch
    peers = {p["name"]: p for p in saved["peers"]}
    assert math.isfinite(peers["plain loop (eager)"]["steps_per_s"])
    assert peers["sentence-transformers trainer (MNRL)"]["status"] in ("ok", "not run: datasets not installed")
    md = (out / "recipes.md").read_text()
    for name in ("simcse-unsup", "bellm"):
        assert f"| {name} | " in md and f"## {name}\n" in md
    assert "sentence-transformers trainer (MNRL)" in md and "a smoke run" in md
    # the plain LoRA loop of issue 31's 7B calibration, on the bellm recipe's shape: 4 triplets x 64 real tokens
    lora = peers["plain LoRA loop (llama-2-7b, 4 triplets x 64 tokens)"]
    assert lora["status"] == "ok" and lora["tokens_per_step"] == 3 * 4 * 64 and math.isfinite(lora["mfu"]) and lora["mfu"] > 0
    assert lora["non_embedding_params"] == bellm["non_embedding_params"]  # the same base and adapters: the same N
    assert "## BeLLM (the 7B shape) against a plain LoRA loop" in md and "| embench, --recipe bellm | 1024 x ≤60 | ok |" in md


@pytest.mark.slow  # over a second: a whole run (fast tier under a minute)
def test_a_recipe_that_fails_is_a_row_with_its_error_not_a_crash(recipes_gpu, data_root, minilm_path, tmp_path,
                                                                 one_thread):
    out = tmp_path / "rg"
    recipes_gpu.main(["--tiny", "--device", "cpu", "--recipes", "crop,simcse-unsup@no-such-shape", "--no-peers",
                      "--set", "batch_size=1000000", "--set", "drop_last=true", "--data", str(data_root), "--tokenizer", str(minilm_path),
                      "--out", str(out)])
    rows = json.loads((out / "recipes_gpu.json").read_text())["rows"]
    assert rows[0]["status"] == "failed" and "fewer than one batch of 1000000" in rows[0]["error"]
    assert rows[1]["status"].startswith("not run: no paper shape known")
    md = (out / "recipes.md").read_text()
    assert "| crop | bert-base | 1000000 x 512 |" in md and "failed: EmbenchError" in md
    assert "| simcse-unsup@no-such-shape | — |" in md


def test_from_scratch_builds_on_the_training_device_in_the_training_dtype(tiny_bert_dir, monkeypatch, tmp_path):
    from transformers import AutoModel

    from embench.train import make_config
    from embench.train.backbone import load_backbone

    seen = []
    build = AutoModel.from_config

    def spy(config, **kw):
        seen.append((torch.get_default_device(), kw.get("torch_dtype")))
        return build(config, **kw)

    monkeypatch.setattr(AutoModel, "from_config", spy)
    for precision, dtype in (("bf16", torch.bfloat16), ("auto", torch.float32)):
        cfg = make_config(method="unsup-simcse", model=str(tiny_bert_dir), from_scratch=True, precision=precision,
                          out=str(tmp_path))
        encoder = load_backbone(cfg, "meta").encoder  # no memory anywhere: only where it was built is checked
        assert seen[-1] == (torch.device("meta"), dtype)
        assert {p.device.type for p in encoder.parameters()} == {"meta"} and {p.dtype for p in encoder.parameters()} == {dtype}


def test_each_epoch_is_one_seeded_shuffle_cut_into_batches_and_split_over_processes():
    from embench.train.batch_order import batch_indices
    from embench.train.distributed import DistInfo

    n, batch, seed = 1000, 64, 7
    for drop_last, per_epoch in ((False, 16), (True, 15)):  # 15 batches of 64 and the 40 left, or without those
        for step in (0, 1, 14, 15, 31):
            epoch, pos = divmod(step, per_epoch)
            order = list(range(n))
            random.Random(seed * 1_000_003 + epoch).shuffle(order)
            want = order[pos * batch : (pos + 1) * batch]
            assert batch_indices(n, batch, step, seed, DistInfo(), drop_last) == want
            halves = [batch_indices(n, batch, step, seed, DistInfo(rank=r, world_size=2, local_rank=r), drop_last)
                      for r in (0, 1)]
            assert halves == [want[: len(want) // 2], want[len(want) // 2 :]]
