"""Defaults shared by every command and function, so that one option means one thing everywhere."""

from __future__ import annotations

# Texts per forward batch wherever embench encodes (run, compare, audit, analyze, mteb, grid, the Python
# API and a model's encode()). Batches are sorted by token length, so padding stays small at this size;
# the scores do not depend on it (the audit's batch-size knob checks that).
BATCH_SIZE = 128

# On a GPU, a batch is cut when its padded tokens (texts x longest text) would pass this budget, and
# BATCH_SIZE is no cap unless --batch-size is given: the budget measured fastest on an H100 for BERT-base
# to Qwen2-1.5B shapes (reports/benchmarks/encode_gpu.md). A CPU keeps BATCH_SIZE texts per batch.
GPU_BATCH_TOKENS = 65536

# The largest seed anywhere (numpy's RandomState and torch take 0 .. 2**32 - 1): a negative or larger one
# is a usage error, not their traceback.
SEED_MAX = 2**32 - 1
