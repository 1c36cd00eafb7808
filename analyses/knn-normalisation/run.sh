#!/usr/bin/env bash
# kNN accuracy of one model read before its L2 normalisation (the cropping paper's "non-normalized embeddings",
# embench's default) and after it (--normalize), on three labelled sets of short texts.
# Usage: analyses/knn-normalisation/run.sh MODEL LABEL OUT_DIR    (needs EMBENCH_DATA, the data root)
# e.g.   analyses/knn-normalisation/run.sh all-MiniLM-L6-v2 all-MiniLM-L6-v2 reports/knn-normalisation/all-MiniLM-L6-v2
set -euo pipefail
MODEL=${1:?model name or folder}; LABEL=${2:?label}; OUT=${3:?output folder}
SETS=(--dataset trec --dataset banking77 --dataset emotion --limit 3000)
GRID=(--metric euclidean --metric cosine --transform raw --transform centred --transform whitened)
for mode in raw unit; do
  flag=(); [[ $mode == unit ]] && flag=(--normalize)
  /usr/bin/time -f "$mode: %e s wall, %M KB peak" \
    embench analyze knn -m "$MODEL" --label "$LABEL" "${flag[@]}" "${SETS[@]}" "${GRID[@]}" -q -o "$OUT/$mode"
done
