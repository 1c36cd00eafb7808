"""A run begun before 2026-11-29 on a corpus holding a U+2028 (or U+0085, a form feed) is refused ``--resume`` on the
unchanged file: embench split its lines there then, and no longer does (data/readers.py ``read_text_lines``). The
refusal said "the file was edited" alone; it now names this cause too, for the files it can be."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from embench.core.errors import EmbenchError
from embench.train import run_state


@pytest.mark.parametrize(("text", "said"), [("one\u2028two\nthree\n", True), ("one\x85two\n", True),
                                            ("one\fpage\n", True), ("one\ntwo\r\nthree\r", False)])
def test_resume_refused_on_other_examples_names_the_new_reading_of_a_file_with_other_line_ends(tmp_path, monkeypatch,
                                                                                              text, said):
    corpus = tmp_path / "wiki.txt"
    corpus.write_text(text, encoding="utf-8", newline="")
    monkeypatch.setattr(run_state.checkpoints, "load_resume", lambda folder: {"data_fingerprint": "0" * 16})
    monkeypatch.setattr(run_state.checkpoints, "check_compatible", lambda saved, cfg: [])
    trainer = SimpleNamespace(out=tmp_path / "run", cfg=SimpleNamespace(data=[str(corpus), "snli"]),
                              root=SimpleNamespace(corpora=tmp_path / "none"), data_fingerprint="1" * 16)
    with pytest.raises(EmbenchError, match="the training examples differ from the checkpoint's") as refused:
        run_state.resume_state(trainer)
    assert (f"if {corpus} is unchanged since the run began, this embench reads it differently" in str(refused.value)
            and "before 2026-11-29" in str(refused.value)) is said
