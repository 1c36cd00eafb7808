"""The one reader of every STS dataset row (:mod:`embench.tasks.sts.datasets`).

Pairs whose gold line is empty are not scored (SentEval's loader drops them). With ``text=senteval``
the sentences are split on whitespace and re-joined with one space, as SimCSE's batcher does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...core.errors import EmbenchError, MalformedDataError
from ...data.readers import check_field_count, iter_tsv, parse_score, read_lines
from ...data.root import DataRoot
from ...evaluation.protocols import EvalProtocol
from ..base import Prepared, RowTask
from .datasets import STS_DATASETS, STSData
from .scored_axes import recorded_sts_protocol
from .scoring import PairGroup, regressor_prepared, similarity_prepared

TEXTS = ("senteval", "raw")


def senteval_text(s: str) -> str:
    """SentEval splits on whitespace and SimCSE's batcher joins the tokens with one space."""
    return " ".join(s.split())


def _usual_field_count(lines: list[str]) -> int | None:
    """The field count most lines of a file have (None for an empty file)."""
    from collections import Counter

    counts = Counter(line.count("\t") + 1 for line in lines if line.strip())
    return counts.most_common(1)[0][0] if counts else None


@dataclass(frozen=True)
class STSTask(RowTask):
    """An STS dataset as a task: reads its row's files, scores them with the shared scorer."""

    data: STSData
    kind: str = "sts"

    def paths(self, root: DataRoot, part: str, text: str) -> list[Path]:
        """Where the files of ``part`` are expected (input before gold for SemEval subsets)."""
        if text == "raw":
            return [root.raw / self.data.raw / f"{n}.gz" for n in self.data.file_names(part)]
        return [root.senteval / self.data.senteval / n for n in self.data.file_names(part)]

    def data_files(self, root: DataRoot) -> list[Path]:
        return [p for text in TEXTS for part in self.data.parts for p in self.paths(root, part, text)]

    def read(self, root: DataRoot, part: str, text: str) -> tuple[PairGroup, list[Path]]:
        """One part's pairs and gold scores, and the files they came from."""
        files = [root.find(p, task=self.name) for p in self.paths(root, part, text)]
        rows = self._gold_file_rows(*files) if len(files) == 2 else self._one_file_rows(files[0])
        left, right, gold = [], [], []
        for a, b, score in rows:
            if text == "senteval":
                a, b = senteval_text(a), senteval_text(b)
            left.append(a)
            right.append(b)
            gold.append(score)
        if not gold:  # an empty part would silently leave the aggregate (different n, different score)
            raise EmbenchError(f"{files[-1]}: no scored pairs in part {part!r} of {self.name}; the file is empty or damaged")
        if not any(a.strip() for a in left) or not any(b.strip() for b in right):
            # blank sentences give one vector for the whole part: a meaningless correlation, not a score
            raise EmbenchError(f"{files[0]}: every {'first' if not any(a.strip() for a in left) else 'second'} sentence "
                               f"of part {part!r} of {self.name} is empty; the file is damaged "
                               f"(`embench data download --task {self.name}` fetches it again)")
        return PairGroup(part, left, right, np.asarray(gold)), files

    def _one_file_rows(self, path: Path):
        fmt = self.data.pair_format
        a, b, y = fmt.columns
        for i, f in iter_tsv(path, min_fields=fmt.min_fields, header=fmt.header, counts=fmt.field_counts):
            yield f[a], f[b], parse_score(path, i, f[y].strip(), fmt.score_name, *fmt.score_range)

    def _gold_file_rows(self, inp: Path, gs: Path):
        fmt = self.data.pair_format
        lines, golds = read_lines(inp), read_lines(gs)
        if len(lines) != len(golds):
            shorter, n = (inp, len(lines)) if len(lines) < len(golds) else (gs, len(golds))
            raise MalformedDataError(shorter, n + 1, f"{inp.name} has {len(lines)} lines but {gs.name} has {len(golds)}")
        usual = _usual_field_count(lines)
        for i, (line, g) in enumerate(zip(lines, golds, strict=True), start=1):
            fields = line.split("\t")
            if usual is not None and len(fields) != usual:  # STS16's release has 4 fields a line, but every line
                raise MalformedDataError(inp, i, f"{len(fields)} tab-separated fields where the file's other lines "
                                                 f"have {usual} (a tab inside a sentence?)")
            if not g.strip():  # an unscored pair (checked above all the same: its line is the file's, damaged or not)
                continue
            if len(fields) < fmt.min_fields:
                raise MalformedDataError(inp, i, f"expected two tab-separated sentences, found {len(fields)} field(s)")
            check_field_count(inp, i, len(fields), fmt.field_counts)
            yield fields[fmt.columns[0]], fields[fmt.columns[1]], parse_score(gs, i, g.strip(), fmt.score_name, *fmt.score_range)

    def recorded_protocol(self, protocol: EvalProtocol) -> EvalProtocol:
        """The protocol this task's record names: the axes it is scored under, the others at their defaults."""
        return recorded_sts_protocol(protocol, self.data.pair_format.split_option)

    def prepare(self, root: DataRoot, protocol: EvalProtocol) -> Prepared:
        option = self.data.pair_format.split_option
        if option is None:  # SemEval subsets: each scored on its own, then aggregated
            read = [self.read(root, part, protocol.text) for part in self.data.parts]
            return similarity_prepared([g for g, _ in read], [f for _, fs in read for f in fs], protocol, text=protocol.text)
        if protocol.scoring == "regressor":  # SentEval: train on the first split, select on the second, score the third
            read = {role: self.read(root, part, protocol.text) for role, part in zip(("train", "dev", "test"), self.data.parts, strict=True)}
            return regressor_prepared({r: g for r, (g, _) in read.items()}, [f for _, fs in read.values() for f in fs],
                                      protocol, text=protocol.text)
        choice = getattr(protocol, option)
        parts = self.data.parts if choice == "full" else (choice,)
        read = [self.read(root, part, protocol.text) for part in parts]
        group = PairGroup(
            choice,
            [t for g, _ in read for t in g.left],
            [t for g, _ in read for t in g.right],
            np.concatenate([g.gold for g, _ in read]),
        )
        return similarity_prepared([group], [f for _, fs in read for f in fs], protocol, split=choice, text=protocol.text)


STS_TASKS = {row.name: STSTask(row) for row in STS_DATASETS}
