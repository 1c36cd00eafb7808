#!/usr/bin/env bash
# The real CPU runs reported in reports/training/, one after another on the 2 CPU cores. Steps, batch
# and length are below the papers' (see README.md); everything else follows them.
#   analyses/training/run_all.sh [a|b|c]      (default: all three lanes)
# RUNS holds the checkpoints (git-ignored); REPORTS gets metrics and results.
set -euo pipefail
RUNS=${RUNS:-runs/training}
REPORTS=${REPORTS:-reports/training}
mkdir -p "$RUNS" "$REPORTS"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

keep() {  # metrics and resolved config of a run
  cp "$RUNS/$1/metrics.jsonl" "$REPORTS/$1.metrics.jsonl"
  cp "$RUNS/$1/train_config.json" "$REPORTS/$1.config.json"
}

lane_a() {
  # 1. all-MiniLM-L6-v2 fine-tuned with crops for one epoch over the 20 Newsgroups training texts (the
  #    cropping paper's in-domain protocol); kNN (k=10) on all test texts before and after.
  embench train --method crop --model all-MiniLM-L6-v2 --train-data 20newsgroups --out "$RUNS/minilm-crop" \
    --batch-size 32 --max-length 128 --epochs 1 --lr 2e-5 --eval-steps 0 --save-steps 50 --set log_steps=10 --quiet
  keep minilm-crop
  python analyses/training/knn_20newsgroups.py --max-length 256 --out "$REPORTS/minilm-crop.knn.json" \
    all-MiniLM-L6-v2=mean "$RUNS/minilm-crop/best"
}

lane_b() {
  # 2. unsupervised SimCSE on the corpora of the data root; STS-B dev before, then every 100 steps.
  embench train --method unsup-simcse --model all-MiniLM-L6-v2 --train-data corpora --out "$RUNS/minilm-simcse" \
    --pooling mean --mlp train --batch-size 64 --max-length 32 --max-steps 300 --lr 3e-5 --eval-steps 100 \
    --set log_steps=10 --quiet
  keep minilm-simcse
}

lane_c() {
  # 3. a small BERT (4 layers, hidden 256) from random initialisation, trained with crops for three
  #    epochs; kNN against its own initial state.
  python analyses/training/make_random_bert.py "$RUNS/bert-small-init" --layers 4 --hidden 256 --heads 4 --seed 0
  embench train --method crop --model "$RUNS/bert-small-init" --train-data 20newsgroups --out "$RUNS/bert-small-crop" \
    --pooling mean --batch-size 32 --max-length 128 --epochs 3 --lr 2e-4 --eval-steps 0 --save-steps 100 \
    --set log_steps=10 --quiet
  keep bert-small-crop
  python analyses/training/knn_20newsgroups.py --max-length 256 --out "$REPORTS/bert-small-crop.knn.json" \
    "$RUNS/bert-small-init=mean" "$RUNS/bert-small-crop/best"
}

case "${1:-all}" in
  a) lane_a ;;
  b) lane_b ;;
  c) lane_c ;;
  *) lane_a; lane_b; lane_c ;;
esac
