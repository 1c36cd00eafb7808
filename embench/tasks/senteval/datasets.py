"""SentEval's transfer tasks as rows of data: their files, line format, labels and validation scheme.

One generic reader and scorer (:mod:`embench.tasks.senteval.transfer`) serve every row.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TransferData:
    """A SentEval classification task, declared.

    ``splits`` maps a split name (``all`` for the one-pool tasks, else ``train``/``dev``/``test``) to
    its files; one-file-per-class tasks give ``(file, label)`` pairs and no ``line`` format. ``line``
    names how a line reads (``trec``, ``sst2``, ``sst-fine``, ``pair-columns``); ``columns`` gives,
    for ``pair-columns``, the first sentence's, the second sentence's and the label's column and the
    number of columns.
    """

    name: str
    display: str
    folder: str  # under SentEval's downstream/
    scheme: str  # "nested" (InnerKFoldClassifier), "kfold" (KFoldClassifier), "split" (SplitClassifier)
    nclasses: int
    splits: dict[str, tuple]
    line: str | None = None
    labels: dict[str, int] = field(default_factory=dict)
    columns: tuple[int, ...] = ()
    encoding: str = "utf-8"
    header: bool = False
    aliases: tuple[str, ...] = ()

    @property
    def description(self) -> str:
        return f"transfer: {self.display} ({self.nclasses} classes, {self.scheme} validation)"


BINARY = {"0": 0, "1": 1}
TREC_LABELS = {"ABBR": 0, "DESC": 1, "ENTY": 2, "HUM": 3, "LOC": 4, "NUM": 5}
SICK_LABELS = {"CONTRADICTION": 0, "NEUTRAL": 1, "ENTAILMENT": 2}
SST_SPLITS = {"train": ("sentiment-train",), "dev": ("sentiment-dev",), "test": ("sentiment-test",)}

TRANSFER_DATASETS = (
    # binary.py: positive file first (label 1), then negative (label 0); SUBJ: objective = 1.
    TransferData("MR", "MR", "MR", "nested", 2, {"all": (("rt-polarity.pos", 1), ("rt-polarity.neg", 0))}, encoding="latin-1"),
    TransferData("CR", "CR", "CR", "nested", 2, {"all": (("custrev.pos", 1), ("custrev.neg", 0))}, encoding="latin-1"),
    TransferData("SUBJ", "SUBJ", "SUBJ", "nested", 2, {"all": (("subj.objective", 1), ("subj.subjective", 0))}, encoding="latin-1"),
    TransferData("MPQA", "MPQA", "MPQA", "nested", 2, {"all": (("mpqa.pos", 1), ("mpqa.neg", 0))}, encoding="latin-1"),
    TransferData("SST2", "SST", "SST/binary", "split", 2, SST_SPLITS, "sst2", BINARY, aliases=("SST", "SST-2")),
    TransferData("TREC", "TREC", "TREC", "kfold", 6, {"train": ("train_5500.label",), "test": ("TREC_10.label",)},
                 "trec", TREC_LABELS, encoding="latin-1"),
    TransferData("MRPC", "MRPC", "MRPC", "kfold", 2, {"train": ("msr_paraphrase_train.txt",), "test": ("msr_paraphrase_test.txt",)},
                 "pair-columns", BINARY, columns=(3, 4, 0, 5), header=True),
    TransferData("SST5", "SST-5", "SST/fine", "split", 5, SST_SPLITS, "sst-fine", {str(i): i for i in range(5)}, aliases=("SST-5",)),
    TransferData("SICKEntailment", "SICK-E", "SICK", "split", 3,
                 {"train": ("SICK_train.txt",), "dev": ("SICK_trial.txt",), "test": ("SICK_test_annotated.txt",)},
                 "pair-columns", SICK_LABELS, columns=(1, 2, 4, 5), header=True, aliases=("SICK-E", "SICKE")),
)
