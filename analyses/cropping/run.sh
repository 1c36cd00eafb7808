#!/usr/bin/env bash
# Cropping vs dropout (paper 001) at CPU scale, through `embench report`:
#  - Table S3 (kNN, raw/centred/whitened x Euclidean/cosine) from reports/minilm-vs-random/knn/knn.csv;
#  - Table S4 (kNN fitted on each set's train split, scored on its test split): run here, small;
#  - the layer-wise curves, t-SNE maps and kNN bars, composed from reports/minilm-vs-random;
#  - one HTML page with all of it.
#
#   analyses/cropping/run.sh [OUT]     default reports/cropping; needs EMBENCH_DATA
set -euo pipefail
OUT=${1:-reports/cropping}
HERE=$(cd "$(dirname "$0")" && pwd)
MVR=reports/minilm-vs-random
mkdir -p "$OUT"

python "$HERE/knn_table.py" "$MVR/knn/knn.csv" "$OUT/table-s3"

# Table S4: train on train, test on test; 1,000 seeded examples of each split (the paper uses every one)
[[ -f "$OUT/knn-s4/knn.csv" ]] || embench analyze knn -m all-MiniLM-L6-v2 --dataset trec --dataset banking77 \
  --set mode=train-test --limit 1000 --metric euclidean --metric cosine --transform raw --transform centred \
  --transform whitened --pooling mean --max-length 256 --out "$OUT/knn-s4" -q
python "$HERE/knn_table.py" "$OUT/knn-s4/knn.csv" "$OUT/table-s4" \
  --caption "kNN accuracy (k = 10) x100, train split -> test split (cropping paper Table S4's protocol)"

# Figure 4c: the mteb-lite block average per layer, every layer from one pass (17 min on 2 cores)
[[ -f "$OUT/layers-mteb/layers.csv" ]] || embench analyze layers -m all-MiniLM-L6-v2 --suite mteb-lite --dataset trec \
  --limit 1000 --out "$OUT/layers-mteb" -q

embench report -a "$MVR" --figure layers --figure knn --image "$MVR/tsne/tsne.png" --image "$MVR/layers/layers.png" \
  -f html --title "Cropping vs dropout at CPU scale" -o "$OUT/cropping.html"
