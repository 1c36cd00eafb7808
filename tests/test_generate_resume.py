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
    (tmp_path / "other.txt").write_text((tmp_path / "prem.txt").read_text())
    with pytest.raises(EmbenchError, match=r"t\.csv was written with other settings \(premises\)"):
        generate_triplets("fake-llm", "other.txt", out)
