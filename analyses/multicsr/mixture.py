"""The paper's supervised mixture (App. G): the generated triplets with the gold SNLI triplet of each premise.

    python analyses/multicsr/mixture.py --out OUT      # reads OUT/triplets.csv, writes OUT/mixture.csv

"For each premise in T, there would be at least one triplet with the same premise in N" (App. G): a batch may
then hold one premise twice, and the other copy's hypotheses are false negatives; stage 3 is meant for them.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from embench.data.root import DataRoot
from embench.data.training_sets import snli_triplets


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    out = ap.parse_args().out
    gold = snli_triplets(DataRoot.resolve(None))
    with open(out / "triplets.csv", newline="", encoding="utf-8") as f:
        generated = list(csv.DictReader(f))
    with open(out / "mixture.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["sent0", "sent1", "hard_neg", "source"])
        for r in generated:
            w.writerow([r["sent0"], r["sent1"], r["hard_neg"], "generated"])
            w.writerow([*gold[int(r["key"]) - 1], "snli"])
    print(f"wrote {2 * len(generated)} triplets to {out / 'mixture.csv'}")


if __name__ == "__main__":
    main()
