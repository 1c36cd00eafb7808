"""A model's own prompts, per side in retrieval, the model catalogue and --revision (issue 32, items 2 and 3)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import embench
from embench.cli import app
from embench.core.errors import EmbenchError, ModelLoadError
from embench.models.catalogue import MODELS, ModelRow, row_for
from embench.models.prompts import PromptSet, exclude_prompt_tokens, template_of

TEXTS = ["A man is playing a guitar.", "Two dogs run across the park {with braces}.", "hi"]
PROMPTS = {"query": "query: ", "document": "passage: ", "classification": "classify {this}: "}
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def st_folder(root: Path, tiny_bert_dir: Path, *, default: str | None = "classification", include_prompt: bool = True,
              prompts: dict[str, str] | None = None) -> Path:
    """A sentence-transformers folder around the tiny BERT (mean pooling) with prompts, written as
    sentence-transformers 6 writes one (``config_sentence_transformers.json``, ``1_Pooling/config.json``)."""
    folder = root / f"st-{default}-{include_prompt}"
    shutil.copytree(tiny_bert_dir, folder)
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"embedding_dimension": 32, "pooling_mode": "mean", "include_prompt": include_prompt}))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.base.modules.transformer.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.sentence_transformer.modules.pooling.Pooling"}]))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64, "do_lower_case": False}))
    (folder / "config_sentence_transformers.json").write_text(json.dumps(
        {"prompts": prompts or PROMPTS, "default_prompt_name": default, "similarity_fn_name": "cosine"}))
    return folder


# -- prompts: the rules, on small inputs -------------------------------------------------------------------
def test_a_prompt_is_a_prefix_whose_braces_survive_the_template():
    assert template_of("classify {this}: ").format(text="x") == "classify {this}: x"
    assert template_of("") == ""


def test_prompt_tokens_leave_the_mask_after_any_left_padding():
    """sentence-transformers' Pooling._exclude_prompt_from_mask, by hand: right padding, then left padding."""
    right = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
    assert exclude_prompt_tokens(right, 2).tolist() == [[0, 0, 1, 1, 0], [0, 0, 1, 1, 1]]
    left = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    assert exclude_prompt_tokens(left, 2).tolist() == [[0, 0, 0, 0, 1], [0, 0, 1, 1, 1]]
    assert right.tolist()[0] == [1, 1, 1, 1, 0]  # a copy: the forward pass still attends to the prompt


def test_sides_and_tasks_choose_prompts_in_mtebs_order():
    ps = PromptSet({"query": "q: ", "document": "", "passage": "p: ", "STS": "sts: ", "SciFact-query": "sf: "}, default=None)
    assert ps.choose(side="query", task="SciFact", task_type="Retrieval") == ("SciFact-query", "sf: ")
    assert ps.choose(side="query", task="NFCorpus", task_type="Retrieval") == ("query", "q: ")
    assert ps.choose(side="document", task="NFCorpus", task_type="Retrieval") == ("passage", "p: ")  # encode_document's order
    assert ps.choose(task="STS12", task_type="STS") == ("STS", "sts: ")
    assert ps.choose(task="Banking77", task_type="Classification") is None  # a symmetric task keeps the default
    assert PromptSet({"query": "q: "}).choose(side="document") == ("", "")  # a side without one: the text as is
    assert PromptSet({"query": "q: "}, fixed=True).choose(side="query") is None  # --prompt-name fixes it
    instruct = PromptSet(instruction="Instruct: {instruction}\nQuery: ")
    assert instruct.choose(side="query", instruction="Find it") == ("instruction", "Instruct: Find it\nQuery: ")
    assert instruct.choose(side="document", instruction="Find it") == ("", "")  # documents get no instruction
    with pytest.raises(EmbenchError, match="'querry'.*Did you mean 'query'"):
        PromptSet({"query": "q: "}, where="config_sentence_transformers.json").get("querry")


# -- a folder's prompts, applied as sentence-transformers applies them -------------------------------------
@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_a_folders_default_prompt_is_applied_and_named_in_the_record_and_cache_key(tmp_path, tiny_bert_dir):
    folder = st_folder(tmp_path, tiny_bert_dir)
    enc = embench.load_model(folder, device="cpu")
    assert enc.settings.prompt == "classify {{this}}: {text}" and enc.describe()["prompt_name"] == "classification"
    keys = {embench.load_model(folder, device="cpu", prompt_name=n).cache_key() for n in ("query", "document", "classification")}
    none = embench.load_model(folder, device="cpu", prompt="none")
    assert len(keys | {none.cache_key()}) == 4 and none.settings.prompt == ""
    same_text = st_folder(tmp_path, tiny_bert_dir, default="a", prompts={"a": "x: ", "b": "x: "})
    a, b = (embench.load_model(same_text, device="cpu", prompt_name=n) for n in ("a", "b"))
    assert a.settings.prompt == b.settings.prompt and a.cache_key() != b.cache_key()  # two names never share an entry


def test_prompt_options_that_cannot_apply_are_errors_naming_them(tmp_path, tiny_bert_dir):
    folder = st_folder(tmp_path, tiny_bert_dir)
    with pytest.raises(EmbenchError, match="prompt_name='querry'.*Did you mean 'query'"):
        embench.load_model(folder, prompt_name="querry")
    with pytest.raises(EmbenchError, match="not both"):
        embench.load_model(folder, prompt_name="query", prompt="bellm")
    with pytest.raises(EmbenchError, match="declares no prompts"):
        embench.load_model(tiny_bert_dir, prompt_name="query")
    (folder / "config_sentence_transformers.json").write_text(json.dumps({"prompts": PROMPTS, "default_prompt_name": "x"}))
    with pytest.raises(EmbenchError, match=r"config_sentence_transformers.json: default_prompt_name 'x' is not one of"):
        embench.load_model(folder)


def test_a_folder_saved_with_include_prompt_false_is_another_record(tmp_path, tiny_bert_dir):
    """Pooling's include_prompt: false leaves the prompt's tokens out of the vector (another cache key), but the record
    key left prompt_tokens_excluded out: a run after editing 1_Pooling/config.json was served the old record."""
    from embench.evaluation.results import record_key

    keys = set()
    for include_prompt in (True, False):
        enc = embench.load_model(st_folder(tmp_path, tiny_bert_dir, default="query", include_prompt=include_prompt))
        keys.add((enc.fingerprint, enc.cache_key(), record_key("STS12", enc.describe(), {})))
    assert len({k[0] for k in keys}) == 1 and len({k[1] for k in keys}) == len({k[2] for k in keys}) == 2


@pytest.mark.slow  # imports sentence-transformers (about 7 s)
@pytest.mark.parametrize("include_prompt", [True, False])
def test_a_folders_prompts_equal_sentence_transformers_encode(tmp_path, tiny_bert_dir, include_prompt):
    """Default prompt, every named prompt, and encode_query/encode_document for the sides, to 1e-6; with
    include_prompt=False the prompt's tokens leave the mean as sentence-transformers leaves them out."""
    from sentence_transformers import SentenceTransformer

    folder = st_folder(tmp_path, tiny_bert_dir, include_prompt=include_prompt)
    st = SentenceTransformer(str(folder), device="cpu")
    enc = embench.load_model(folder, device="cpu")
    np.testing.assert_allclose(enc.encode_batch(TEXTS), st.encode(TEXTS), atol=1e-6)
    plain = embench.load_model(folder, device="cpu", prompt="none").encode_batch(TEXTS)
    assert np.abs(plain - enc.encode_batch(TEXTS)).max() > 1e-3  # the default prompt changes the vectors
    for name in PROMPTS:
        got = embench.load_model(folder, device="cpu", prompt_name=name).encode_batch(TEXTS)
        np.testing.assert_allclose(got, st.encode(TEXTS, prompt_name=name), atol=1e-6)
    for side, peer in (("query", st.encode_query), ("document", st.encode_document)):
        np.testing.assert_allclose(enc.prompt_set.encoder_for(enc, {"side": side}).encode_batch(TEXTS), peer(TEXTS), atol=1e-6)


@pytest.mark.slow  # sentence-transformers, and STS-B's 2.7k texts through the CLI
def test_the_cli_prompt_name_gives_sentence_transformers_vectors_and_records_the_prompt(env, tiny_bert_dir, data_root):
    from sentence_transformers import SentenceTransformer

    from embench.data.root import DataRoot
    from embench.encoding.engine import Engine
    from embench.evaluation.protocols import EvalProtocol
    from embench.tasks import TASKS

    folder = st_folder(env, tiny_bert_dir)
    r = CliRunner().invoke(app, ["run", "-m", str(folder), "--prompt-name", "query", "-t", "STSBenchmark", "--device", "cpu",
                                 "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    record = json.loads(next((env / "results").rglob("STSBenchmark*.json")).read_text())
    assert record["encoder"]["prompt_name"] == "query" and record["encoder"]["prompt"] == "query: {text}"
    texts = TASKS.get("STSBenchmark").prepare(DataRoot(data_root), EvalProtocol()).texts
    engine = Engine(embench.load_model(folder, device="cpu", prompt_name="query"), cache_dir=env / "cache")
    cached = engine.embed(texts)
    assert engine.stats["encoded"] == 0 and engine.stats["from_cache"] == len(set(texts))  # what the CLI stored
    st = SentenceTransformer(str(folder), device="cpu")
    np.testing.assert_allclose(cached, st.encode(texts, prompt_name="query", batch_size=128), atol=1e-6)


# -- per side in retrieval, through the MTEB bridge --------------------------------------------------------
@pytest.mark.slow  # imports mteb and sentence-transformers
def test_retrieval_queries_and_documents_get_their_prompts_and_score_as_mteb_with_sentence_transformers(
        tmp_path, tiny_bert_dir, data_root, monkeypatch):
    import mteb
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper
    from sentence_transformers import SentenceTransformer

    from embench.data.root import DataRoot
    from embench.encoding.engine import Engine
    from embench.evaluation.protocols import EvalProtocol
    from embench.models.encoder import HFEncoder
    from embench.tasks.mteb.load import load_into
    from embench.tasks.mteb.tasks import MTEBTask

    folder = st_folder(tmp_path, tiny_bert_dir, default=None)
    seen: list[str] = []
    prepare = HFEncoder._prepare
    monkeypatch.setattr(HFEncoder, "_prepare", lambda self, texts: seen.extend(out := prepare(self, texts)) or out)
    task = MTEBTask("SciFact", limit=12)
    prepared = task.prepare(DataRoot(data_root), EvalProtocol())
    out = prepared.score(Engine(embench.load_model(folder, device="cpu"), batch_size=64).embed)
    n_queries = prepared.meta["local_counts"]["num_queries"]
    queries, docs = set(prepared.texts[:n_queries]), set(prepared.texts[n_queries:])
    assert {t.removeprefix("query: ") for t in seen if t.startswith("query: ")} == queries
    assert {t.removeprefix("passage: ") for t in seen if t.startswith("passage: ")} == docs
    # the same slice through mteb with sentence-transformers itself (its encode_query / encode_document prompts)
    peer_task = task.mteb_task()
    load_into(peer_task, DataRoot(data_root), 12)
    wrapper = SentenceTransformerEncoderWrapper(SentenceTransformer(str(folder), device="cpu"))
    peer = mteb.evaluate(wrapper, peer_task, cache=None, overwrite_strategy="always", show_progress_bar=False,
                         co2_tracker=False).task_results[0]
    assert out.main == pytest.approx(peer.get_score(), abs=1e-6)


# -- the catalogue ----------------------------------------------------------------------------------------
def test_every_catalogue_row_names_what_a_model_needs():
    rows = [MODELS.get(n) for n in MODELS.names()]
    assert len(rows) >= 25 and row_for("sentence-transformers/ALL-MINILM-L6-V2").name == "all-MiniLM-L6-v2"
    assert row_for("intfloat/e5-base-v2").prompts == {"query": "query: ", "document": "passage: "}
    assert row_for("bert-base-uncased").name == "google-bert/bert-base-uncased" and row_for("/tmp/some/folder") is None
    for row in rows:
        assert row.citation and row.reference and row.similarity in ("cosine", "dot"), row.name
        assert row.revision is None or (len(row.revision) == 40 and int(row.revision, 16) >= 0), row.name


@pytest.mark.slow  # imports mteb (about 5 s)
def test_catalogue_rows_agree_with_mtebs_model_meta():
    """Every pinned revision, size, similarity and prompt is mteb's own (no invented hash); rows mteb does not
    know are the unpinned ones."""
    import mteb

    for name in MODELS.names():
        row = MODELS.get(name)
        try:
            meta = mteb.get_model_meta(row.hub_id)
        except KeyError:
            assert row.revision is None, f"{name}: pinned, but mteb does not know it"
            continue
        # where mteb's size is not the vectors' length (gte-Qwen2-1.5B: 8960, its MLP's width; hidden size 1536), the
        # row says the true one and its note names mteb's
        dim = meta.embed_dim if f"mteb's ModelMeta states dim {meta.embed_dim}," not in (row.note or "") else row.dim
        assert (row.revision, row.dim, row.max_tokens, row.similarity) == (
            meta.revision, dim, int(meta.max_tokens), str(meta.similarity_fn_name.value)), name
        kwargs = meta.loader_kwargs or {}
        theirs = {k: v for k, v in (kwargs.get("model_prompts") or {}).items() if not k.startswith("Bright")}
        assert row.prompts == theirs, name
        template = kwargs.get("instruction_template")
        expected = template if isinstance(template, str) else template("{instruction}") if callable(template) else None
        assert row.instruction == expected, name
    assert MODELS.get("Alibaba-NLP/gte-Qwen2-1.5B-instruct").dim == 1536  # Qwen2-1.5B's hidden_size


def test_a_row_sets_defaults_that_options_and_a_folders_own_config_override(tmp_path, tiny_bert_dir, monkeypatch):
    row = ModelRow(name="tiny", pooling="mean", normalize=True, prompts={"query": "q: "}, default_prompt="query",
                   citation="x", reference="y")
    monkeypatch.setattr("embench.models.loader.row_to_load", lambda name: row)
    enc = embench.load_model(tiny_bert_dir, device="cpu")
    assert (enc.settings.pooling, enc.settings.normalize, enc.settings.prompt) == ("mean", True, "q: {text}")
    mine = embench.load_model(tiny_bert_dir, device="cpu", pooling="cls", normalize=False, prompt="none")
    assert (mine.settings.pooling, mine.settings.normalize, mine.settings.prompt) == ("cls", False, "")
    folder = st_folder(tmp_path, tiny_bert_dir, default=None, prompts={"query": "folder: ", "document": "doc: "})
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": 32, "pooling_mode": "cls"}))
    st = embench.load_model(folder, device="cpu")
    # the folder's pooling and normalisation stand; the row's prompts replace the folder's whole (as mteb's
    # model_prompts do: model.prompts = model_prompts), so the folder's document prompt is not used
    assert (st.settings.pooling, st.settings.normalize, st.settings.prompt) == ("cls_before_pooler", False, "q: {text}")
    assert st.prompt_set.choose(side="document") == ("", "") and st.prompt_set.choose(side="query") == ("query", "q: ")


def test_list_models_shows_the_catalogue():
    out = CliRunner().invoke(app, ["list", "models"]).stdout
    line = next(x for x in out.splitlines() if x.startswith("intfloat/e5-base-v2"))
    assert "rev 1c644c9" in line and "query='query: '" in line and "document='passage: '" in line and "dim 768" in line
    assert "all-MiniLM-L6-v2 (sentence-transformers/all-MiniLM-L6-v2)" in out


# -- --revision -------------------------------------------------------------------------------------------
@pytest.fixture()
def hub_cache(tmp_path, tiny_bert_dir, monkeypatch) -> Path:
    """A Hugging Face cache holding ``embench-test/tiny`` at one commit (``main`` points at it), read offline."""
    from huggingface_hub import constants

    repo = tmp_path / "hub" / "models--embench-test--tiny"
    shutil.copytree(tiny_bert_dir, repo / "snapshots" / COMMIT)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


def test_a_revision_is_read_from_the_hub_cache_and_kept_in_the_encoder_and_cache_key(hub_cache, tiny_bert_dir):
    pinned = embench.load_model("embench-test/tiny", revision=COMMIT, device="cpu")
    assert pinned.revision == COMMIT and pinned.describe()["revision"] == COMMIT
    assert embench.load_model("embench-test/tiny", revision="main", device="cpu").cache_key() == pinned.cache_key()
    assert embench.load_model(tiny_bert_dir, device="cpu").cache_key() != pinned.cache_key()  # same weights, no commit
    short = embench.load_model("embench-test/tiny", revision=COMMIT[:7], device="cpu")  # as `list models` prints it
    assert short.revision == COMMIT and short.cache_key() == pinned.cache_key()  # was: "the cache does not hold" it


def test_a_revision_that_cannot_be_had_is_an_error_naming_it(hub_cache, tiny_bert_dir):
    with pytest.raises(ModelLoadError, match=r"at revision 'v9', which the local Hugging Face cache does not hold"):
        embench.load_model("embench-test/tiny", revision="v9")
    other = "f" * 40  # a commit the cache does not hold, offline: looked for in the cache alone
    with pytest.raises(ModelLoadError, match=f"at revision '{other}', which the local Hugging Face cache does not hold"):
        embench.load_model("embench-test/tiny", revision=other)
    with pytest.raises(EmbenchError, match="revision='v9' names a hub revision; .* is a local folder"):
        embench.load_model(tiny_bert_dir, revision="v9")
    # a known model's pinned commit is asked for when none is given
    with pytest.raises(ModelLoadError, match="at revision '1c644c92ad3ba1efdad3f1451a637716616a20e8'"):
        embench.load_model("intfloat/e5-base-v2")


@pytest.mark.slow  # an STS task through the CLI
def test_the_cli_revision_reaches_the_record(env, hub_cache):
    r = CliRunner().invoke(app, ["run", "-m", "embench-test/tiny", "--revision", "main", "-t", "STS12", "--device", "cpu",
                                 "--pooling", "mean", "-q"])
    assert r.exit_code == 0, r.output
    record = json.loads(next((env / "results").rglob("STS12*.json")).read_text())
    assert record["provenance"]["model_revision"] == COMMIT and record["encoder"]["revision"] == COMMIT


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_revision_and_prompt_name_are_shared_options_of_every_model_command():
    def params(*path: str) -> set[str]:
        import typer

        command = typer.main.get_command(app)
        for name in path:
            command = command.commands[name]
        return {p.name for p in command.params}

    for path in (("run",), ("mteb", "run"), ("compare",), ("analyze",), ("audit",), ("grid",)):
        assert {"revision", "prompt_name"} <= params(*path), path
    assert "revision" in params("train")
