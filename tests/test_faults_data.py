"""Damaged data is an error naming the file and line, never a different score."""

from __future__ import annotations

import shutil

import pytest

import embench
from embench.core.errors import EmbenchError, MalformedDataError
from embench.data.root import DataRoot
from embench.tasks import TASKS


def _copy(data_root, tmp_path, rel: str):
    src = data_root / "senteval" / "downstream" / rel
    dest = tmp_path / "senteval" / "downstream" / rel
    shutil.copytree(src, dest)
    return dest


def test_an_sts_subset_whose_files_are_both_empty_is_an_error(data_root, tmp_path):
    dest = _copy(data_root, tmp_path, "STS/STS12-en-test")
    (dest / "STS.input.MSRpar.txt").write_text("")
    (dest / "STS.gs.MSRpar.txt").write_text("")
    with pytest.raises(EmbenchError, match=r"STS\.gs\.MSRpar\.txt.*no scored pairs"):
        TASKS.get("STS12").prepare(DataRoot(tmp_path), embench.EvalProtocol())


@pytest.mark.parametrize(("value", "problem"), [("inf", "not finite"), ("-inf", "not finite"), ("nan", "not finite"),
                                                 ("5.5", "outside"), ("-0.1", "outside"), ("1e309", "not finite")])
def test_a_gold_score_that_is_not_finite_or_out_of_range_names_file_and_line(data_root, tmp_path, value, problem):
    dest = _copy(data_root, tmp_path, "STS/STS13-en-test")
    gold = (dest / "STS.gs.FNWN.txt").read_text().splitlines()
    gold[6] = value
    (dest / "STS.gs.FNWN.txt").write_text("\n".join(gold) + "\n")
    with pytest.raises(MalformedDataError, match=rf"STS\.gs\.FNWN\.txt:7: .*{problem}"):
        TASKS.get("STS13").prepare(DataRoot(tmp_path), embench.EvalProtocol())


def test_invalid_utf8_in_an_sts_file_names_file_and_line(data_root, tmp_path):
    dest = _copy(data_root, tmp_path, "STS/STS13-en-test")
    lines = (dest / "STS.input.FNWN.txt").read_bytes().split(b"\n")
    lines[1] = b"\xff\xfe" + lines[1]
    (dest / "STS.input.FNWN.txt").write_bytes(b"\n".join(lines))
    with pytest.raises(MalformedDataError, match=r"STS\.input\.FNWN\.txt:2: not valid UTF-8"):
        TASKS.get("STS13").prepare(DataRoot(tmp_path), embench.EvalProtocol())


def test_windows_line_endings_give_the_same_pairs_and_scores(data_root, tmp_path):
    dest = _copy(data_root, tmp_path, "STS/STS13-en-test")
    for name in ("STS.input.FNWN.txt", "STS.gs.FNWN.txt"):
        (dest / name).write_bytes((dest / name).read_bytes().replace(b"\n", b"\r\n"))
    sts13 = TASKS.get("STS13")
    (crlf, _), (clean, _) = (sts13.read(DataRoot(root), "FNWN", "senteval") for root in (tmp_path, data_root))
    assert (crlf.left, crlf.right, crlf.gold.tolist()) == (clean.left, clean.right, clean.gold.tolist())


def test_a_tab_inside_a_sentence_is_an_error_not_a_shorter_sentence(data_root, tmp_path):
    dest = _copy(data_root, tmp_path, "STS/STS13-en-test")
    lines = (dest / "STS.input.FNWN.txt").read_text().splitlines()
    a, b = lines[9].split("\t")
    lines[9] = a.replace(" ", "\t", 1) + "\t" + b
    (dest / "STS.input.FNWN.txt").write_text("\n".join(lines) + "\n")
    with pytest.raises(MalformedDataError, match=r"STS\.input\.FNWN\.txt:10: .*3"):
        TASKS.get("STS13").prepare(DataRoot(tmp_path), embench.EvalProtocol())


def test_a_tab_inside_an_sts_b_sentence_is_an_error(data_root, tmp_path):
    dest = _copy(data_root, tmp_path, "STS/STSBenchmark")
    lines = (dest / "sts-test.csv").read_text(encoding="utf-8").splitlines()
    lines[4] = lines[4] + "\textra words"
    (dest / "sts-test.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"sts-test\.csv:5: .*8"):
        TASKS.get("STSBenchmark").prepare(DataRoot(tmp_path), embench.EvalProtocol())


def test_a_tab_inside_an_mrpc_sentence_is_an_error(data_root, tmp_path):
    dest = _copy(data_root, tmp_path, "MRPC")
    lines = (dest / "msr_paraphrase_test.txt").read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3] + "\tmore"
    (dest / "msr_paraphrase_test.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    from embench.tasks.senteval.datasets import TRANSFER_DATASETS
    from embench.tasks.senteval.reading import read_task

    mrpc = next(d for d in TRANSFER_DATASETS if d.name == "MRPC")
    with pytest.raises(MalformedDataError, match=r"msr_paraphrase_test\.txt:4: .*6"):
        read_task(DataRoot(tmp_path), mrpc)


def test_a_transfer_split_with_no_samples_is_an_error(data_root, tmp_path):
    dest = _copy(data_root, tmp_path, "TREC")
    (dest / "TREC_10.label").write_text("\n\n")
    from embench.tasks.senteval.datasets import TRANSFER_DATASETS
    from embench.tasks.senteval.reading import read_task

    trec = next(d for d in TRANSFER_DATASETS if d.name == "TREC")
    with pytest.raises(EmbenchError, match=r"TREC_10\.label.*no samples"):
        read_task(DataRoot(tmp_path), trec)


@pytest.mark.parametrize(("task", "folder", "part"), [("STS12", "STS/STS12-en-test", "MSRpar"),
                                                      ("STS16", "STS/STS16-en-test", "headlines")])
def test_a_tab_inside_both_sentences_is_an_error_not_two_other_sentences(data_root, tmp_path, task, folder, part):
    # 4 fields read as (sentence 1, sentence 2) would score another split of the line (issue 35, item 3);
    # STS16's release has 4 fields on every line, but SentEval's copy has 2
    dest = _copy(data_root, tmp_path, folder)
    path = dest / f"STS.input.{part}.txt"
    lines = path.read_text().splitlines()
    gold = (dest / f"STS.gs.{part}.txt").read_text().splitlines()
    i = next(k for k, g in enumerate(gold) if g.strip())  # a scored line (STS16 leaves many unscored)
    a, b = lines[i].split("\t")
    lines[i] = a.replace(" ", "\t", 1) + "\t" + b.replace(" ", "\t", 1)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MalformedDataError, match=rf"STS\.input\.{part}\.txt:{i + 1}: .*4"):
        TASKS.get(task).prepare(DataRoot(tmp_path), embench.EvalProtocol())


def test_a_damaged_unscored_line_is_an_error_too(data_root, tmp_path):
    """An unscored pair's line (empty gold) with a stray tab was skipped unread: the file is damaged all the same."""
    dest = _copy(data_root, tmp_path, "STS/STS16-en-test")
    path = dest / "STS.input.answer-answer.txt"
    lines = path.read_text().splitlines()
    gold = (dest / "STS.gs.answer-answer.txt").read_text().splitlines()
    i = next(k for k, g in enumerate(gold) if not g.strip())
    lines[i] += "\textra"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MalformedDataError, match=rf"STS\.input\.answer-answer\.txt:{i + 1}: 3 tab-separated fields"):
        TASKS.get("STS16").prepare(DataRoot(tmp_path), embench.EvalProtocol())


def test_the_original_sts16_release_with_four_fields_on_every_line_is_read(data_root):
    prepared = TASKS.get("STS16").prepare(DataRoot(data_root), embench.EvalProtocol(text="raw"))
    assert len(prepared.texts) == 2372


def test_a_part_whose_sentences_are_all_empty_is_an_error(data_root, tmp_path):
    dest = _copy(data_root, tmp_path, "STS/STS12-en-test")
    n = len((dest / "STS.input.MSRpar.txt").read_text().splitlines())
    (dest / "STS.input.MSRpar.txt").write_text("\t\n" * n)  # 750 bare tabs: the gold lines still there
    with pytest.raises(EmbenchError, match=r"STS\.input\.MSRpar\.txt: every first sentence of part 'MSRpar' of STS12 is empty"):
        TASKS.get("STS12").prepare(DataRoot(tmp_path), embench.EvalProtocol())


def test_an_undefined_score_is_an_error_and_no_nan_record(tmp_path, data_root, monkeypatch):
    import numpy as np

    monkeypatch.setenv("EMBENCH_RESULTS", str(tmp_path / "results"))

    class Constant:  # every text the same vector: no correlation exists
        fingerprint = "constant"

        def encode(self, texts, **kw):
            return np.ones((len(texts), 4), dtype=np.float32)

    with pytest.raises(EmbenchError, match=r"STS12: the score is undefined \(nan\)"):
        embench.evaluate(Constant(), tasks=["STS12"], data=data_root, progress=False, use_cache=False)
    assert not list((tmp_path / "results").rglob("*.json"))

    class Jitter(Constant):  # the same vector up to float rounding (a column paired with itself): a noise correlation
        def encode(self, texts, **kw):
            rng = np.random.default_rng(len(texts))
            return (1 + 1e-7 * rng.standard_normal((len(texts), 4))).astype(np.float32)

    with pytest.raises(EmbenchError, match=r"STS12: the score is undefined \(nan\)"):
        embench.evaluate(Jitter(), tasks=["STS12"], data=data_root, progress=False, use_cache=False)
    assert not list((tmp_path / "results").rglob("*.json"))


def test_an_undefined_score_stops_nothing_else_and_the_error_holds_what_was_scored(tmp_path, data_root, monkeypatch):
    """Before, the first undefined row ended the run: the rows after it were never scored and no table was printed."""
    import numpy as np

    from embench.core.errors import UndefinedScoreError

    monkeypatch.setenv("EMBENCH_RESULTS", str(tmp_path / "results"))

    class HalfConstant:  # the first 4 dimensions the same for every text: kept alone, no correlation exists
        fingerprint = "half-constant"

        def encode(self, texts, **kw):
            rng = np.random.default_rng(0)
            return np.hstack([np.ones((len(texts), 4)), rng.standard_normal((len(texts), 4))]).astype(np.float32)

    with pytest.raises(UndefinedScoreError, match=r"^STS12 \(dim 4\), STS13 \(dim 4\): the score is undefined \(nan\).*these are not$") as e:
        embench.evaluate(HalfConstant(), tasks=["STS12", "STS13"], truncate_dim=[4, 8], data=data_root, progress=False,
                         use_cache=False)
    assert sorted(r.task for r in e.value.evaluation.records) == ["STS12", "STS13"]  # the 8-dim rows: scored ...
    assert len(list((tmp_path / "results").rglob("*.json"))) == 2  # ... and stored
