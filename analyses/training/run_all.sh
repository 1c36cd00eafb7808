#!/usr/bin/env bash
# The real CPU runs reported in reports/training/ (2 shared cores; small on purpose).
# RUNS holds the checkpoints (not committed); REPORTS gets metrics and results.
set -euo pipefail
RUNS=${RUNS:-runs/training}
REPORTS=${REPORTS:-reports/training}
mkdir -p "$RUNS" "$REPORTS"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false

# 1. all-MiniLM-L6-v2 fine-tuned with crops on the 20 Newsgroups training texts; kNN (k=10) on the test texts.
embench train --method crop --model all-MiniLM-L6-v2 --data 20newsgroups --out "$RUNS/minilm-crop" \
  --batch-size 32 --max-length 128 --max-steps 150 --lr 2e-5 --eval-steps 0 --quiet
cp "$RUNS/minilm-crop/metrics.jsonl" "$REPORTS/minilm-crop.metrics.jsonl"
cp "$RUNS/minilm-crop/train_config.json" "$REPORTS/minilm-crop.config.json"
python analyses/training/knn_20newsgroups.py --out "$REPORTS/minilm-crop.knn.json" \
  all-MiniLM-L6-v2=mean "$RUNS/minilm-crop/best"

# 2. unsupervised SimCSE on the corpora of the data root; STS-B dev before and after (every 50 steps).
embench train --method unsup-simcse --model all-MiniLM-L6-v2 --data corpora --out "$RUNS/minilm-simcse" \
  --pooling mean --mlp train --batch-size 64 --max-length 32 --max-steps 250 --lr 3e-5 --eval-steps 50 --quiet
cp "$RUNS/minilm-simcse/metrics.jsonl" "$REPORTS/minilm-simcse.metrics.jsonl"
cp "$RUNS/minilm-simcse/train_config.json" "$REPORTS/minilm-simcse.config.json"

# 3. a small BERT (4 layers, hidden 256) from random initialisation, trained with crops; kNN against its initial state.
python analyses/training/make_random_bert.py "$RUNS/bert-small-init" --layers 4 --hidden 256 --heads 4 --seed 0
embench train --method crop --model "$RUNS/bert-small-init" --data 20newsgroups --out "$RUNS/bert-small-crop" \
  --pooling mean --batch-size 32 --max-length 128 --max-steps 400 --lr 1e-4 --eval-steps 0 --quiet
cp "$RUNS/bert-small-crop/metrics.jsonl" "$REPORTS/bert-small-crop.metrics.jsonl"
cp "$RUNS/bert-small-crop/train_config.json" "$REPORTS/bert-small-crop.config.json"
python analyses/training/knn_20newsgroups.py --out "$REPORTS/bert-small-crop.knn.json" \
  "$RUNS/bert-small-init=mean" "$RUNS/bert-small-crop/best"
