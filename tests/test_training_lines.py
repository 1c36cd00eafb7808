"""Training sentences are split into lines as SimCSE's loader (``datasets.load_dataset("text")``) splits them: at
``\\n``, ``\\r\\n`` and a lone ``\\r`` only, never at a U+2028, U+0085 or form feed inside a sentence."""

from __future__ import annotations

from embench.data.training_sets import read_sentences


def test_only_newlines_end_a_training_sentence(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes("one\u2028sentence\nform\x0cfeed\r\nnext\u0085line\rlast\n\n  \n".encode())
    assert read_sentences(corpus) == ["one\u2028sentence", "form\x0cfeed", "next\u0085line", "last"]
