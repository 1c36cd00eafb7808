#!/usr/bin/env bash
# all-MiniLM-L6-v2 against a randomly initialised BERT of the same shape, every analysis.
# Usage: analyses/minilm-vs-random/run.sh RANDOM_BERT_DIR [OUT_DIR]
#   RANDOM_BERT_DIR: made by analyses/training/make_random_bert.py (outside the repository: weights are not committed)
#   OUT_DIR: default reports/minilm-vs-random
# Needs EMBENCH_DATA (the data root). Both models are mean-pooled (MiniLM's own pooling; the random
# model's default would be CLS through a random pooler head) and truncated at MiniLM's 256 tokens.
set -euo pipefail
MODEL_DIR=${1:?random BERT folder}
OUT=${2:-reports/minilm-vs-random}
M=(-m all-MiniLM-L6-v2 --label all-MiniLM-L6-v2 -m "$MODEL_DIR" --label "random BERT" --pooling mean --max-length 256 -q)
# An analysis whose folder already has a figure is skipped (FORCE=1 redoes it), so the script resumes.
run() {
  local name=$1; shift
  if [[ -z "${FORCE:-}" ]] && compgen -G "$OUT/$name/*.png" > /dev/null; then echo "== $name: done, skipped"; return; fi
  echo "== $name"; /usr/bin/time -f "$name: %e s wall" embench analyze "$name" "${M[@]}" --out "$OUT/$name" "$@"
}
run spectrum
run alignment-uniformity
run cosine-density
run token-dependency --limit 1000
run attention --limit 500
run cls-energy --limit 500
run knn --limit 3000 --metric euclidean --metric cosine --transform raw --transform centred --transform whitened
run tsne --dataset agnews --dataset trec --limit 3000
run layers --dataset trec --limit 1000   # every layer, 0 (the embeddings) to 6
