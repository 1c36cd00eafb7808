"""benchmarks/encode_gpu.py (issue 30's GPU report) on tiny shapes on the CPU: the rows a GPU session's call 2 asks for
(``benchmarks/GPU_SESSION.md``) all run, and the report carries what the issue names, so device time is not spent
finding a broken script."""

from __future__ import annotations

import json
import math

import pytest

SUMMARY = ("frac_of_matmul", "vs_st_same_batch", "vs_st_best_batch", "vs_plain_loop")  # issue 30, item 4


@pytest.mark.slow  # a whole run of the script: about 20 s
def test_tiny_run_gives_every_row_of_the_gpu_call_and_the_issue_s_summary(benchmark_script, data_root, minilm_path,
                                                                          tmp_path):
    encode_gpu = benchmark_script("encode_gpu")
    out = tmp_path / "encode_gpu"
    result = encode_gpu.main(["--tiny", "--device", "cpu", "--limit", "64", "--minilm", str(minilm_path),
                              "--models", "bert-base,qwen2-1.5b", "--budgets", "", "--st-batches", "256",
                              "--cuda-graphs", "", "--compile", "", "--unpadded", "bert-base,qwen2-1.5b",
                              "--ablations", "bert-base", "--profile", "bert-base", "--out", str(out)])
    saved = json.loads(out.with_suffix(".json").read_text())
    assert saved["summary"] == result["summary"] and set(saved["summary"]) == {"bert-base", "qwen2-1.5b"}
    for name, summary in saved["summary"].items():
        for key in (*SUMMARY, "frac_of_matmul_unpadded", "vs_plain_loop_unpadded"):
            assert math.isfinite(summary[key]) and summary[key] > 0, (name, key, summary[key])
        # the same vectors as sentence-transformers, padded and as one row of real tokens (the reference attention)
        assert summary["cosine_vs_st_min"] > 0.9999 and summary["cosine_vs_st_min_unpadded"] > 0.9999, (name, summary)
        runs = saved["models"][name]["runs"]
        assert not [label for label, run in runs.items() if "error" in run], runs
        assert {"embench@65536", "st@64", "st@256", "embench-unpadded@65536"} <= set(runs)
        # what the batches padded the real tokens to: embench's least-padding cut pads no more than the plain loop's
        real = saved["models"][name]["tokens"]
        assert real <= runs["embench@65536"]["padded_tokens"] <= runs["plain@65536"]["padded_tokens"], runs
    assert set(saved["summary"]["bert-base"]["frac_of_matmul_ablated"]) == {"without the gc freeze", "without the prepared mask"}
    assert "aten::" in saved["models"]["bert-base"]["profile"]
    md = out.with_suffix(".md").read_text()
    assert "| bert-base | " in md and "## qwen2-1.5b" in md and "not run" in md  # no --compile, no --cuda-graphs here
