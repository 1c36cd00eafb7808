#!/usr/bin/env bash
# Cropping paper Figures 1 and 3 at CPU scale: kNN accuracy *during* fine-tuning, crops against the paper's
# dropout baseline, both continuing all-MiniLM-L6-v2 on the 20 Newsgroups training texts (in-domain, as the
# paper's ICLR runs), kNN on 20 Newsgroups every 10 steps.
#
#   analyses/cropping/during_training.sh [OUT] [RUNS]   OUT: default reports/cropping/during-training;
#                                                       RUNS: scratch (default mktemp -d); needs EMBENCH_DATA
# Scale: 40 steps of batch 32 at 128 tokens, lr 2e-5 (the paper: MPNet, 1 epoch, batch 64, on ICLR); kNN
# (k = 10, Euclidean, raw, stratified 9:1 split) on a seeded 2,000 of the 20 Newsgroups texts, 200 test points.
set -euo pipefail
OUT=${1:-reports/cropping/during-training}
RUNS=${2:-$(mktemp -d)}
mkdir -p "$OUT"
for METHOD in crop dropout; do
  [[ -f "$RUNS/$METHOD/metrics.jsonl" ]] || \
    embench train --method "$METHOD" --model all-MiniLM-L6-v2 --train-data 20newsgroups --out "$RUNS/$METHOD" \
      --batch-size 32 --max-length 128 --max-steps 40 --lr 2e-5 --eval-steps 10 \
      --eval-analysis knn:datasets=twentynewsgroups,limit=2000 --set log_steps=5 --seed 0 --quiet
  cp "$RUNS/$METHOD/metrics.jsonl" "$OUT/minilm-$METHOD-metrics.jsonl"
done
embench report -a "$OUT" --figure training-knn --figure training-loss -f html \
  --title "kNN accuracy during fine-tuning: crops vs dropout on all-MiniLM-L6-v2 (cropping paper Figures 1 and 3)" \
  -o "$OUT/during-training.html"
