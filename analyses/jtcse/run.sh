#!/usr/bin/env bash
# JTCSE at CPU scale on all-MiniLM-L6-v2 (issue 16): two towers (MiniLM continued with unsupervised
# SimCSE under seeds 1 and 2, standing in for the paper's RTT-trained sub-encoders), JTCSE on them,
# distillation of the twin into one MiniLM, then sts-all and E_CLS of each (report.py).
#
#   analyses/jtcse/run.sh [OUT]        OUT defaults to a new temporary folder
#
# Needs EMBENCH_DATA (the corpus is its corpora/wiki1m-prefix.txt.gz). Finished steps are kept:
# a second call with the same OUT skips them. Scale (kept small for a shared 2-core CPU): the first
# 4,000 sentences of the corpus, max length 32, batch 32, 120 steps per training run.
set -euo pipefail
OUT=${1:-$(mktemp -d)}
HERE=$(cd "$(dirname "$0")" && pwd)
CORPUS="$EMBENCH_DATA/corpora/wiki1m-prefix.txt.gz"
SMALL=(--data "$CORPUS" --max-examples 4000 --max-length 32 --batch-size 32 --max-steps 120 --quiet)
export EMBENCH_CACHE=${EMBENCH_CACHE:-$OUT/cache}  # the teacher's and every model's vectors, kept with the run
echo "output: $OUT"

for s in 1 2; do
  [ -f "$OUT/tower$s/best/config.json" ] || \
    embench train --method unsup-simcse --model all-MiniLM-L6-v2 "${SMALL[@]}" --eval-steps 0 --seed "$s" --out "$OUT/tower$s"
done

# JTCSE (Eq. 15, paper forms, all weights 1): 3 cross-attention layers of MiniLM's 6 (k = 2, as the
# paper's best 6 of 12); lr 1e-5 instead of the recipe's 1.3e-6, because the run is 120 steps, not 15,600
[ -f "$OUT/jtcse/best/ensemble.json" ] || \
  embench train --method jtcse --model "$OUT/tower1/best" --tower2 "$OUT/tower2/best" "${SMALL[@]}" \
    --lr 1e-5 --cross-layers 3 --eval-steps 40 --out "$OUT/jtcse"

# JTCSE D: the twin ([CLS]_I + [CLS]_II) distilled into one MiniLM by MSE, teacher vectors computed once
[ -f "$OUT/distill/best/config.json" ] || \
  embench train --method distill --teacher "$OUT/jtcse/best" --model all-MiniLM-L6-v2 "${SMALL[@]}" \
    --max-steps 60 --lr 5e-5 --eval-steps 30 --out "$OUT/distill"

python "$HERE/report.py" --out "$OUT" \
  --model "all-MiniLM-L6-v2 (mean pooling)=all-MiniLM-L6-v2" \
  --model "all-MiniLM-L6-v2 [CLS]=all-MiniLM-L6-v2#cls_before_pooler" \
  --model "tower I (SimCSE seed 1)=$OUT/tower1/best" \
  --model "tower II (SimCSE seed 2)=$OUT/tower2/best" \
  --model "twin, untrained (I + II)=ensemble:$OUT/tower1/best+$OUT/tower2/best" \
  --model "JTCSE twin=$OUT/jtcse/best" \
  --model "JTCSE D (distilled)=$OUT/distill/best"
