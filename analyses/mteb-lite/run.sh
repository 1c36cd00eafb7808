#!/usr/bin/env bash
# mteb-lite for one model through mteb's own evaluators on the local data root, its block averages,
# the records exported in mteb's result layout, and the benchmark of the shared cache.
#   analyses/mteb-lite/run.sh [MODEL] [OUT]
set -euo pipefail
model="${1:-all-MiniLM-L6-v2}"
out="${2:-reports/mteb-lite}"
mkdir -p "$out"
embench run -m "$model" --suite mteb-lite --results-dir "$out/results" --format markdown -q > "$out/mteb-lite.md"
embench mteb blocks --results-dir "$out/results" --format markdown > "$out/blocks.md"
embench mteb export --results-dir "$out/results" --mteb-output "$out/mteb-results"
python benchmarks/mteb_lite.py --phase cold --out "$out/benchmark-cold.json"
python benchmarks/mteb_lite.py --phase shared --tasks STS --out "$out/benchmark-shared.json"
