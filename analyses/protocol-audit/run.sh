#!/usr/bin/env bash
# One model under every protocol knob (SimCSE Table B.2 shape), matched against MTEB's published
# numbers; then the published tables of the seed papers checked for averages that do not add up.
#   analyses/protocol-audit/run.sh [MODEL] [OUT] [PAPERS_DIR]
set -euo pipefail
model="${1:-all-MiniLM-L6-v2}"
out="${2:-reports/audit}"
papers="${3:-../shared/papers}"
mkdir -p "$out"
embench audit -m "$model" --results-dir "$out/results" --format markdown \
  --reported "STS12=72.37 STS13=80.60 STS14=75.59 STS15=85.39 STS16=78.99 STSBenchmark=82.03 SICK-R=77.58" \
  > "$out/$model.md"
for notes in "$papers"/*.notes.md; do
  echo "## $(basename "$notes")"
  embench audit table "$notes" || true
done > "$out/table-check.md"
