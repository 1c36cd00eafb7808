#!/usr/bin/env bash
# JTCSE Figure 10 at CPU scale: the 7-STS average against the mean CLS energy weight E_CLS (Eq. 6) over
# "some representative models". The paper does not list its models; here: all-MiniLM-L6-v2 under mean and
# [CLS] pooling, all-mpnet-base-v2 (MPNET=<folder>, ../shared/tools/get-mpnet.sh), a randomly initialised
# BERT of MiniLM's shape, and the two small BERTs that analyses/cropping/during_training.sh trains from
# scratch (CROP_RUNS=<its RUNS folder>), each with its own pooling.
#
#   analyses/jtcse/figure10.sh [OUT] [RUNS]     OUT: default reports/jtcse/figure-10; RUNS: scratch
set -euo pipefail
OUT=${1:-reports/jtcse/figure-10}
RUNS=${2:-$(mktemp -d)}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
[[ -f "$RUNS/random-bert/config.json" ]] || \
  python analyses/training/make_random_bert.py "$RUNS/random-bert" --layers 6 --hidden 384 --heads 12 --seed 0
MODELS=(--model "all-MiniLM-L6-v2 (mean)=all-MiniLM-L6-v2"
        --model "all-MiniLM-L6-v2 [CLS]=all-MiniLM-L6-v2#cls_before_pooler"
        --model "random BERT, MiniLM's shape (mean)=$RUNS/random-bert#mean")
if [[ -n "${MPNET:-}" ]]; then MODELS+=(--model "all-mpnet-base-v2 (mean)=$MPNET"); fi
if [[ -n "${CROP_RUNS:-}" ]]; then
  MODELS+=(--model "small BERT + crops, 150 steps (mean)=$CROP_RUNS/crop/best#mean"
           --model "small BERT + dropout, 150 steps (mean)=$CROP_RUNS/dropout/best#mean")
fi
# report.py stores the STS records (which name this machine's paths) in RUNS; only its tables and figures are kept
python "$HERE/report.py" --out "$RUNS/figure-10" "${MODELS[@]}"
cp "$RUNS/figure-10/table.md" "$RUNS/figure-10/table.csv" "$RUNS/figure-10"/ecls_vs_sts.* "$OUT/"
