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
    TransferData(name="MR", display="MR", folder="MR", scheme="nested", nclasses=2,
                 splits={"all": (("rt-polarity.pos", 1), ("rt-polarity.neg", 0))}, encoding="latin-1"),
    TransferData(name="CR", display="CR", folder="CR", scheme="nested", nclasses=2,
                 splits={"all": (("custrev.pos", 1), ("custrev.neg", 0))}, encoding="latin-1"),
    TransferData(name="SUBJ", display="SUBJ", folder="SUBJ", scheme="nested", nclasses=2,
                 splits={"all": (("subj.objective", 1), ("subj.subjective", 0))}, encoding="latin-1"),
    TransferData(name="MPQA", display="MPQA", folder="MPQA", scheme="nested", nclasses=2,
                 splits={"all": (("mpqa.pos", 1), ("mpqa.neg", 0))}, encoding="latin-1"),
    TransferData(name="SST2", display="SST", folder="SST/binary", scheme="split", nclasses=2, splits=SST_SPLITS,
                 line="sst2", labels=BINARY, aliases=("SST", "SST-2")),
    TransferData(name="TREC", display="TREC", folder="TREC", scheme="kfold", nclasses=6,
                 splits={"train": ("train_5500.label",), "test": ("TREC_10.label",)}, line="trec", labels=TREC_LABELS,
                 encoding="latin-1"),
    TransferData(name="MRPC", display="MRPC", folder="MRPC", scheme="kfold", nclasses=2,
                 splits={"train": ("msr_paraphrase_train.txt",), "test": ("msr_paraphrase_test.txt",)},
                 line="pair-columns", labels=BINARY, columns=(3, 4, 0, 5), header=True),
    TransferData(name="SST5", display="SST-5", folder="SST/fine", scheme="split", nclasses=5, splits=SST_SPLITS,
                 line="sst-fine", labels={str(i): i for i in range(5)}, aliases=("SST-5",)),
    TransferData(name="SICKEntailment", display="SICK-E", folder="SICK", scheme="split", nclasses=3,
                 splits={"train": ("SICK_train.txt",), "dev": ("SICK_trial.txt",), "test": ("SICK_test_annotated.txt",)},
                 line="pair-columns", labels=SICK_LABELS, columns=(1, 2, 4, 5), header=True, aliases=("SICK-E", "SICKE")),
)
