#!/usr/bin/env bash
# SimCSE (paper 000) at CPU scale: Table B.2 (one model under the "all", "wmean" and "mean" protocols),
# Figure 2 (alignment-uniformity over the checkpoint series of an embench unsup-SimCSE run), Figures F.1
# and G.1 (spectra, cosine densities by gold score) and one HTML page with all of them.
#
#   analyses/simcse/run.sh [OUT] [RUNS]     OUT: default reports/simcse; RUNS: scratch (default mktemp -d)
#
# Needs EMBENCH_DATA. Set MPNET=<all-mpnet-base-v2 folder> (../shared/tools/get-mpnet.sh) to add it as the
# SBERT row. F.1 and G.1 are drawn from reports/minilm-vs-random (run analyses/minilm-vs-random/run.sh first).
set -euo pipefail
OUT=${1:-reports/simcse}
RUNS=${2:-$(mktemp -d)}
RESULTS="$RUNS/results"
MODELS=(-m all-MiniLM-L6-v2)
NAMES=(--name all-MiniLM-L6-v2=MiniLM-L6)
if [[ -n "${MPNET:-}" ]]; then MODELS+=(-m "$MPNET"); NAMES+=(--name "$MPNET=MPNet (SBERT)"); fi
mkdir -p "$OUT"

# Table B.2: the same embeddings scored under three aggregations (one encoding, re-scored from the cache)
for agg in all wmean mean; do
  embench run "${MODELS[@]}" --suite sts-all --aggregation "$agg" --results-dir "$RESULTS" -q -f markdown > /dev/null
done
CAP="STS under the 'all', 'wmean' and 'mean' aggregations (Spearman x100), as SimCSE Table B.2"
embench report --results-dir "$RESULTS" --suite sts-all --split rows "${NAMES[@]}" --caption "$CAP" --standalone -o "$OUT/table-b2.tex"
embench report --results-dir "$RESULTS" --suite sts-all --split rows "${NAMES[@]}" --caption "$CAP" -f markdown -o "$OUT/table-b2.md"

# Figure 2: unsupervised SimCSE on MiniLM (mean pooling, MLP in training only), a checkpoint every 10 steps
RUN="$RUNS/minilm-simcse"
[[ -d "$RUN/checkpoints" ]] || embench train --method unsup-simcse --model all-MiniLM-L6-v2 --train-data corpora --out "$RUN" \
  --pooling mean --mlp train --batch-size 32 --max-length 32 --max-steps 40 --lr 3e-5 --eval-steps 0 --save-every 10 \
  --set log_steps=10 --quiet
embench analyze alignment-uniformity -m all-MiniLM-L6-v2 --label "MiniLM (step 0)" -m "$RUN/checkpoints" \
  --label "unsup. SimCSE checkpoints" --pooling mean --out "$OUT/figure-2" -q

# F.1, G.1 and Figure 2 composed with one colour per model, and the page with the table
embench report --results-dir "$RESULTS" --suite sts-all --split rows "${NAMES[@]}" --caption "$CAP" \
  -a reports/minilm-vs-random -a "$OUT/figure-2" --figure spectrum --figure cosine-density \
  -f html --title "SimCSE at CPU scale" -o "$OUT/simcse.html"
embench report -a "$OUT/figure-2" --figure alignment-uniformity -f html --title "SimCSE Figure 2" -o "$OUT/figure-2.html"
