"""`generate triplets` resumes from the same premises file however its path is spelled."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from embench.core.errors import EmbenchError


@pytest.mark.slow  # imports torch and the language-model stack
def test_a_resume_accepts_the_premises_file_under_another_spelling(tmp_path, monkeypatch):
    """`--premises prem.txt` then `./prem.txt` was refused: the settings file kept the path as given, compared as text."""
    import embench.models.language_model as language_model
    from embench.generate import generate_triplets, triplets

    monkeypatch.setattr(language_model, "load_language_model", lambda llm, device=None: SimpleNamespace(fingerprint="f"))
    monkeypatch.setattr(triplets, "_one_batch", lambda lm, prompts, batch, *rest: ([("e", "c", 0, 0) for _ in batch], 2))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prem.txt").write_text("a man plays\nthe cat sleeps\ndogs run\nrain falls\n")
    out = tmp_path / "t.csv"
    assert generate_triplets("fake-llm", "prem.txt", out, limit=2).written == 2
    assert generate_triplets("fake-llm", "./prem.txt", out, limit=3).already == 2
    assert generate_triplets("fake-llm", str(tmp_path / "prem.txt"), out).already == 3
    meta = tmp_path / "t.csv.json"
    assert json.loads(meta.read_text())["settings"]["premises"] == str((tmp_path / "prem.txt").resolve())
    kept = json.loads(meta.read_text())
    kept["settings"]["premises"] = "prem.txt"  # a file written before: the path as given, read from here
    meta.write_text(json.dumps(kept))
    assert generate_triplets("fake-llm", "./prem.txt", out).already == 4
    assert generate_triplets("fake-llm", tmp_path / "prem.txt", out).already == 4  # a Path: was an AttributeError
    (tmp_path / "other.txt").write_text((tmp_path / "prem.txt").read_text())
    with pytest.raises(EmbenchError, match=r"t\.csv was written with other settings \(premises\)"):
        generate_triplets("fake-llm", "other.txt", out)


def _fake_generation(monkeypatch):
    """`generate_triplets` with a stand-in model: every premise gets ("e", "c") under prompts 0 and 0."""
    import embench.models.language_model as language_model
    from embench.generate import triplets

    monkeypatch.setattr(language_model, "load_language_model", lambda llm, device=None: SimpleNamespace(fingerprint="f"))
    monkeypatch.setattr(triplets, "_one_batch", lambda lm, prompts, batch, *rest: ([("e", "c", 0, 0) for _ in batch], 2))


@pytest.mark.slow  # imports torch and the language-model stack
@pytest.mark.parametrize("cut", [2, 1])
def test_a_last_triplet_cut_short_is_generated_again_though_its_fields_look_whole(tmp_path, monkeypatch, cut):
    """Cut 2 bytes, the last row `...,3,0,` still had 6 fields and a numeric key: it was kept, its last field empty,
    while the warning said it would be generated again (0 triplets written)."""
    from embench.generate import generate_triplets

    _fake_generation(monkeypatch)
    (tmp_path / "prem.txt").write_text("a man plays\nthe cat sleeps\ndogs run\n")
    out = tmp_path / "t.csv"
    assert generate_triplets("fake-llm", str(tmp_path / "prem.txt"), out).written == 3
    whole = out.read_text()
    out.write_text(whole[:-cut])  # a kill mid-write
    warned: list[str] = []
    again = generate_triplets("fake-llm", str(tmp_path / "prem.txt"), out, warn=warned.append)
    assert (again.written, again.already) == (1, 2) and any("cut short" in w for w in warned)
    assert out.read_text() == whole


def test_a_row_cut_inside_a_quoted_field_is_cut_short_though_it_ends_in_a_newline(tmp_path):
    from embench.generate.appended import complete_rows

    path = tmp_path / "a.csv"
    path.write_text('index,answer\n0,"4\nbecause"\n1,"3\n')  # the second answer cut after its first line
    assert complete_rows(path) == ([["index", "answer"], ["0", "4\nbecause"]], True)
    path.write_text('index,answer\n0,"4\nbecause"\n')
    assert complete_rows(path) == ([["index", "answer"], ["0", "4\nbecause"]], False)


def _fake_scoring(monkeypatch, asked: list[int]):
    """`curate_triplets` with a stand-in model: every entailment answered "4.5", every contradiction "0.5"."""
    import embench.models.language_model as language_model
    from embench.generate import curation

    lm = SimpleNamespace(model=None, kind="causal", tokenizer=SimpleNamespace(chat_template=None, decode=lambda x, **_: x))
    monkeypatch.setattr(language_model, "load_language_model", lambda llm, device=None: lm)
    monkeypatch.setattr(language_model, "language_model_fingerprint", lambda llm, **_: "f")

    def decode(model, kind, tok, prompts, *rest):
        asked.append(len(prompts) // 2)
        return ["4.5"] * (len(prompts) // 2) + ["0.5"] * (len(prompts) // 2), 0

    monkeypatch.setattr(curation, "decode", decode)


def _triplets(path, n: int = 3):
    path.write_text("sent0,sent1,hard_neg\n" + "".join(f"p{i},e{i},c{i}\n" for i in range(n)))
    return path


@pytest.mark.slow  # imports pandas and matplotlib (the summary's figure)
@pytest.mark.parametrize("cut", [3, 1])
def test_a_last_answer_cut_short_is_asked_again_not_read_as_another_score(tmp_path, monkeypatch, cut):
    """The contradiction answer `0.5` cut to `0` was reused as a score of 0 (and a newline appended made it a whole
    row for good)."""
    from embench.generate import curate_triplets
    from embench.generate.curation import _paths

    asked: list[int] = []
    _fake_scoring(monkeypatch, asked)
    trip, out = _triplets(tmp_path / "t.csv"), tmp_path / "kept.csv"
    curate_triplets("fake-llm", trip, out)
    scores = _paths(out)["scores"]
    whole = scores.read_text()
    assert whole.endswith(",c2,4.5,0.5\n")
    scores.write_text(whole[:-cut])
    result = curate_triplets("fake-llm", trip, out)
    assert asked == [3, 1] and scores.read_text() == whole
    summary = json.loads(_paths(out)["summary"].read_text())
    assert summary["scores"]["contradiction"] == {"0.5": 3} and result.total == 3


@pytest.mark.slow  # reads model folders' files for their fingerprints, imports pandas and matplotlib
def test_reused_answers_follow_the_model_s_weights_not_its_path_as_typed(tmp_path, monkeypatch, tiny_llama_dir,
                                                                       tiny_bert_dir):
    """`--llm /abs/llamalm` then `--llm ./llamalm` was refused ("other settings (llm)"), and a symlink re-pointed to
    another model reused the first model's answers. A scores file of the version before (the path as typed, no
    weights) is still read: the same model where its path holds the same weights now."""
    import shutil

    from embench.generate import curate_triplets
    from embench.generate.curation import SCORE_HEADER, _paths
    from embench.generate.prompts import SCORING

    trip, out = _triplets(tmp_path / "t.csv"), tmp_path / "kept.csv"
    scores = _paths(out)["scores"]
    meta = scores.with_name(scores.name + ".json")
    shutil.copytree(tiny_llama_dir, tmp_path / "llamalm")
    shutil.copytree(tiny_bert_dir, tmp_path / "llamalm2")
    scores.write_text(",".join(SCORE_HEADER) + "\n" + "".join(f"{i},p{i},e{i},c{i},4,1\n" for i in range(3)))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cur").symlink_to(tmp_path / "llamalm")

    def curate(llm: str):  # every answer is in the file: no model is asked (none could be: these have no LM head)
        return curate_triplets(llm, trip, out).kept

    assert curate(str(tmp_path / "llamalm")) == 3
    assert curate("./llamalm") == curate("cur") == 3  # one model's weights, however named
    assert json.loads(meta.read_text())["llm_fingerprint"]
    (tmp_path / "cur").unlink()
    (tmp_path / "cur").symlink_to(tmp_path / "llamalm2")
    with pytest.raises(EmbenchError, match=r"holds answers asked with other settings \(llm\): remove it, or give "
                                           r"another out$"):  # in Python's spelling (the command line: --out)
        curate("cur")
    with pytest.raises(EmbenchError, match=r"other settings \(llm\): remove it, or give another scores$"):
        curate_triplets("cur", trip, tmp_path / "elsewhere.csv", scores=scores)  # --scores named it: that option is said
    older = {"llm": str(tmp_path / "llamalm"), "chat": None, "max_new_tokens": 8, "answer_prefix": "", "prompt": SCORING}
    meta.write_text(json.dumps(older))  # written by the version before
    assert curate("./llamalm") == 3 and json.loads(meta.read_text())["llm_fingerprint"]  # kept with its weights now
    meta.write_text(json.dumps(older))
    with pytest.raises(EmbenchError, match=r"other settings \(llm\)"):
        curate("cur")  # another model's weights than the path it names
