"""A lone surrogate (a JSON ``\\ud800`` escape without its other half) in a text: refused where the text comes in,
naming the file and line or the argument and the text's index. It was a raw ``UnicodeEncodeError ... surrogates not
allowed`` traceback from the cache key (embench/encoding/cache.py), even with the cache off."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import embench
from embench.cli import app
from embench.core.errors import EmbenchError, MalformedDataError
from embench.core.surrogates import json_surrogate_problem, surrogate_problem
from embench.data.readers import iter_jsonl
from embench.data.training_sets import read_documents, read_sentences
from embench.encoding.engine import Engine

pytestmark = pytest.mark.usefixtures("task_registry_restored")  # conftest.py: --task-file registers its task

BAD = '{"sentence1": "bad \\ud800 text", "sentence2": "another 3", "score": 3}'  # as the file holds it: an escape
GOOD = '{"sentence1": "a smile \\ud83d\\ude00", "sentence2": "another", "score": 2}'  # a whole pair: one character
LONE = "lone surrogate U\\+D800 at character 4"


def test_the_check_finds_a_lone_half_and_passes_a_whole_pair():
    assert surrogate_problem("plain") is None and surrogate_problem("a smile \U0001F600") is None
    assert "lone surrogate U+DC00 at character 2" in surrogate_problem("ab\udc00")
    assert json_surrogate_problem(GOOD, json.loads(GOOD)) is None
    assert json_surrogate_problem(BAD, json.loads(BAD)).startswith("'sentence1' holds a lone surrogate U+D800")
    nested = '{"a": {"b": ["ok", "x\\udfff"]}}'
    assert json_surrogate_problem(nested, json.loads(nested)).startswith("'a'['b'][1] holds a lone surrogate U+DFFF")
    key = '{"k\\ud800": 1}'
    assert json_surrogate_problem(key, json.loads(key)).startswith("a key ('k\\ud800') holds")


def test_a_jsonl_line_with_a_lone_surrogate_is_named_by_file_and_line(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(f"{GOOD}\n\n{BAD}\n", encoding="utf-8")
    with pytest.raises(MalformedDataError, match=rf"rows.jsonl:3: 'sentence1' holds a {LONE}") as e:
        list(iter_jsonl(path))
    assert e.value.line == 3


def test_training_data_in_jsonl_with_a_lone_surrogate_is_named(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"text": "fine"}\n{"text": "bad \\ud800 text"}\n', encoding="utf-8")
    for read in (read_documents, read_sentences):
        with pytest.raises(MalformedDataError, match=rf"corpus.jsonl:2: 'text' holds a {LONE}"):
            read(path)


@pytest.mark.slow  # the CLI, and a model loaded
def test_a_task_file_with_a_lone_surrogate_is_one_error_naming_file_and_line(tmp_path, tiny_bert_dir):
    (tmp_path / "test.jsonl").write_text(f"{GOOD}\n{BAD}\n", encoding="utf-8")
    (tmp_path / "t.yaml").write_text("name: sur-sts\nkind: pairs\nfiles: {test: test.jsonl}\nscore_range: [0, 5]\n")
    for cache in ([], ["--no-cache"]):
        r = CliRunner().invoke(app, ["run", "-m", str(tiny_bert_dir), "--task-file", str(tmp_path / "t.yaml"),
                                     "--results-dir", str(tmp_path / "r"), "-q", *cache])
        # an EmbenchError: the entry point (cli/app.py main) prints it as one line, status 2
        assert isinstance(r.exception, MalformedDataError), repr(r.exception)
        assert str(r.exception).startswith(f"{tmp_path / 'test.jsonl'}:2: 'sentence1' holds a lone surrogate U+D800")


def test_texts_from_python_name_the_call_and_the_index(tiny_bert_dir, tmp_path):
    model = embench.load_model(tiny_bert_dir)
    for call, run in (("encode()", lambda texts: model.encode(texts, cache_dir=tmp_path)),
                      ("encode()", lambda texts: model.encode(texts, use_cache=False)),
                      ("encode_batch()", model.encode_batch)):
        with pytest.raises(EmbenchError, match=rf"^{call[:-2]}\(\): text 1 \('bad \\ud800 text'\) holds a {LONE}"):
            run(["fine", "bad \ud800 text"])
    # the engine's own entry (the MTEB bridge, the analyses): the index among the texts it was given
    for cache in (tmp_path / "c", None):
        with pytest.raises(EmbenchError, match=r"^text 2 of the 3 to encode \('x\\udfff'\) holds a lone surrogate U\+DFFF"):
            Engine(model, cache_dir=cache).embed(["a", "b", "x\udfff"])
