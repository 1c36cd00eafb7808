"""The STS datasets as rows of data: where each one's files are and how its parts are scored.

One generic reader (:mod:`embench.tasks.sts.reader`) reads every row, and the MTEB bridge reads the
same rows for MTEB's copies of these tasks. A part is a SemEval subset (STS12-16: each scored on its
own, then aggregated) or a split (STS-B, SICK-R: a protocol option chooses which one is scored).
Adding an STS set is one row here (and, for a new file layout, one entry in ``FORMATS``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PairFormat:
    """How the files of one part hold sentence pairs and gold scores."""

    files: tuple[str, ...]  # file name(s) of a part, {part} filled in; a second name is a separate gold file
    columns: tuple[int, int, int]  # first sentence, second sentence, gold score (in the gold file when separate)
    min_fields: int
    header: tuple[str, ...] = ()  # the first fields of a header line, checked: a file without it would lose a pair
    score_name: str = "score"
    file_parts: dict[str, str] = field(default_factory=dict)  # part -> the name its files use, where they differ
    split_option: str | None = None  # the protocol axis choosing the scored part ("full": all parts as one)
    # the field counts a line may have (in the input file): any other count is a tab inside a sentence or a
    # torn line, an error rather than a shifted or shortened sentence; and the range a gold score must be in
    field_counts: tuple[int, ...] = ()
    score_range: tuple[float, float] = (0.0, 5.0)


FORMATS = {
    # SemEval releases: STS.input.<subset>.txt (two tab-separated sentences) + STS.gs.<subset>.txt (a score a line)
    # (the original STS16 release adds two source columns: its dataset row allows 4 fields, no other does, so a
    # tab inside both sentences of an STS12-15 line is an error, not two other sentences)
    "semeval": PairFormat(files=("STS.input.{part}.txt", "STS.gs.{part}.txt"), columns=(0, 1, 0), min_fields=2,
                          score_name="gold score", field_counts=(2,)),
    # STS-B: genre, file, year, id, score, sentence1, sentence2 (tab-separated, no header)
    # (some lines of the original release carry two more source columns)
    "stsb": PairFormat(files=("sts-{part}.csv",), columns=(5, 6, 4), min_fields=7, split_option="stsb_split",
                       field_counts=(7, 9)),
    # SICK: pair_ID, sentence_A, sentence_B, relatedness_score, entailment_judgment (header line)
    "sick": PairFormat(files=("SICK_{part}.txt",), columns=(1, 2, 3), min_fields=4, score_name="relatedness score",
                       file_parts={"test": "test_annotated"}, split_option="sick_split", field_counts=(5,),
                       score_range=(1.0, 5.0), header=("pair_ID", "sentence_A", "sentence_B", "relatedness_score")),
}


@dataclass(frozen=True)
class STSData:
    """One STS dataset: its folders in SentEval's layout and in the original releases, and its parts.

    For split formats the parts are train, dev, test in that order (SentEval's regressor trains on the
    first, selects on the second and scores the third).
    """

    name: str
    format: str  # a key of FORMATS
    senteval: str  # folder under SentEval's downstream/ (tokenised, lower-cased text)
    raw: str  # folder under the data root's raw/ (the original releases, gzip-compressed)
    parts: tuple[str, ...]
    display: str = ""
    aliases: tuple[str, ...] = ()
    field_counts: tuple[int, ...] = ()  # where this dataset's files differ from its format's

    @property
    def pair_format(self) -> PairFormat:
        fmt = FORMATS[self.format]
        return dataclasses.replace(fmt, field_counts=self.field_counts) if self.field_counts else fmt

    def file_names(self, part: str) -> list[str]:
        """The names of the files of ``part`` (SentEval layout; the raw release adds ``.gz``)."""
        fmt = self.pair_format
        return [f.format(part=fmt.file_parts.get(part, part)) for f in fmt.files]

    @property
    def description(self) -> str:
        return f"sts: {self.display or self.name} ({', '.join(self.parts)})"


STS_DATASETS = (
    STSData(name="STS12", format="semeval", senteval="STS/STS12-en-test", raw="sts/STS12",
            parts=("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews")),
    STSData(name="STS13", format="semeval", senteval="STS/STS13-en-test", raw="sts/STS13",
            parts=("FNWN", "headlines", "OnWN")),
    STSData(name="STS14", format="semeval", senteval="STS/STS14-en-test", raw="sts/STS14",
            parts=("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news")),
    STSData(name="STS15", format="semeval", senteval="STS/STS15-en-test", raw="sts/STS15",
            parts=("answers-forums", "answers-students", "belief", "headlines", "images")),
    STSData(name="STS16", format="semeval", senteval="STS/STS16-en-test", raw="sts/STS16",
            parts=("answer-answer", "headlines", "plagiarism", "postediting", "question-question"), field_counts=(2, 4)),
    STSData(name="STSBenchmark", format="stsb", senteval="STS/STSBenchmark", raw="sts/STSBenchmark",
            parts=("train", "dev", "test"), display="STS-B", aliases=("STS-B", "STSB")),
    STSData(name="SICKRelatedness", format="sick", senteval="SICK", raw="sick2014",
            parts=("train", "trial", "test"), display="SICK-R", aliases=("SICK-R", "SICKR")),
)
STS_BY_NAME = {row.name: row for row in STS_DATASETS}
