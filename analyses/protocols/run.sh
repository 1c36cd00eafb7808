#!/usr/bin/env bash
# The protocol choices papers disagree on, as tables made by `embench report` from stored records:
#  1. the audit's pooling knob (SimCSE Table B.2 extended): the model's own pooling, cls, mean, both
#     first-last variants (first_last_avg = layer 1 + last, SimCSE; embed_last_avg = embeddings + last,
#     BERT-whitening) and cls_before_pooler, one shared forward pass;
#  2. SimCSE Table B.2's aggregations (all / wmean / mean) x correlation, one row per protocol;
#  3. MRPC and SICK-E with SentEval's code's pair features [|u-v|, u*v] (the default) and [u, v, |u-v|, u*v].
#
#   analyses/protocols/run.sh [MODEL] [OUT] [RUNS]    defaults: all-MiniLM-L6-v2, reports/protocols, mktemp -d
set -euo pipefail
model=${1:-all-MiniLM-L6-v2}
OUT=${2:-reports/protocols}
RUNS=${3:-$(mktemp -d)}
mkdir -p "$OUT"

embench audit -m "$model" --knobs pooling --results-dir "$RUNS/pooling" -f markdown -q > "$OUT/audit-pooling.md"
embench report --results-dir "$RUNS/pooling" --suite sts-all --caption "STS (SimCSE protocol) under each pooling" \
  -f markdown -o "$OUT/pooling.md"
embench report --results-dir "$RUNS/pooling" --suite sts-all --caption "STS (SimCSE protocol) under each pooling" \
  --standalone -o "$OUT/pooling.tex"

for agg in all wmean mean; do for corr in spearman pearson; do
  embench run -m "$model" --suite sts-all --aggregation "$agg" --correlation "$corr" --results-dir "$RUNS/aggregation" -q -f csv > /dev/null
done; done
embench report --results-dir "$RUNS/aggregation" --split rows --caption "One model under SimCSE Table B.1's protocols" -f markdown -o "$OUT/aggregation.md"
embench report --results-dir "$RUNS/aggregation" --split rows --caption "One model under SimCSE Table B.1's protocols" --standalone -o "$OUT/aggregation.tex"
# without --split the same folder is refused, naming the axes that differ (kept as evidence)
embench report --results-dir "$RUNS/aggregation" -f markdown > /dev/null 2> "$OUT/mixed-protocols-error.txt" || true

for pf in senteval-code uv; do
  embench run -m "$model" -t MRPC -t SICKEntailment --pair-features "$pf" --results-dir "$RUNS/pairs" -q -f csv > /dev/null
done
embench report --results-dir "$RUNS/pairs" --split rows --caption "Pair tasks under both feature conventions" -f markdown -o "$OUT/pair-features.md"
embench report --results-dir "$RUNS/pairs" --split rows --caption "Pair tasks under both feature conventions" --standalone -o "$OUT/pair-features.tex"
embench report --results-dir "$RUNS/aggregation" --results-dir "$RUNS/pairs" --split tables -f html --title "Protocols: one model, every choice" \
  -o "$OUT/protocols.html"
