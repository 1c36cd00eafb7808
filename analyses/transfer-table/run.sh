#!/usr/bin/env bash
# SentEval transfer table for one model under both classifier configurations and both pair-feature
# conventions, plus SST-5 and SICK-E; timings from benchmarks/transfer.py.
#   analyses/transfer-table/run.sh [MODEL] [OUT]
set -euo pipefail
model="${1:-all-MiniLM-L6-v2}"
out="${2:-reports/transfer}"
mkdir -p "$out"
for clf in default prototyping; do
  embench run -m "$model" --suite transfer --classifier "$clf" --results-dir "$out/results" \
    --format markdown -q > "$out/transfer-$clf.md"  # the seven, Avg. as the papers print it
  embench run -m "$model" -t SST5 -t SICK-E --classifier "$clf" --results-dir "$out/results" \
    --format markdown -q > "$out/extra-$clf.md"
  embench run -m "$model" -t MRPC -t SICK-E --classifier "$clf" --pair-features senteval-code \
    --results-dir "$out/results" --format markdown -q > "$out/pairs-senteval-code-$clf.md"
done
python benchmarks/transfer.py --model "$model" --classifier default --sequential MRPC --out "$out/benchmark-default.json"
