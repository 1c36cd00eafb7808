"""Defaults shared by every command and function, so that one option means one thing everywhere."""

from __future__ import annotations

# Texts per forward batch wherever embench encodes (run, compare, audit, analyze, mteb, grid, the Python
# API and a model's encode()). Batches are sorted by token length, so padding stays small at this size;
# the scores do not depend on it (the audit's batch-size knob checks that).
BATCH_SIZE = 128
