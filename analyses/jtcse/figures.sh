#!/usr/bin/env bash
# JTCSE's analysis figures through `embench report` (issue 20): attention-sink shares and E_CLS per layer
# (composed from reports/minilm-vs-random, MiniLM against a random BERT), the attention maps as drawn
# there, and the cosine densities of STS-B pairs in five equal-count gold groups (computed here).
#
#   analyses/jtcse/figures.sh [OUT]     default reports/jtcse/figures; needs EMBENCH_DATA
set -euo pipefail
OUT=${1:-reports/jtcse/figures}
MVR=reports/minilm-vs-random
mkdir -p "$OUT"
[[ -f "$OUT/cosine-density-equal-count/cosine_density.csv" ]] || embench analyze cosine-density -m all-MiniLM-L6-v2 \
  --set groups=equal-count --pooling mean --max-length 256 --out "$OUT/cosine-density-equal-count" -q
embench report -a "$MVR/attention" -a "$MVR/cls-energy" --figure attention-sinks --figure cls-energy \
  --image "$MVR/attention/attention_maps.png" --image "$OUT/cosine-density-equal-count/cosine_density.png" \
  -f html --title "JTCSE analyses at CPU scale" -o "$OUT/jtcse.html"
