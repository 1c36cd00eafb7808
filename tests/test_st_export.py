"""Kept checkpoints are ONE folder that sentence-transformers, transformers and embench load with the same
vectors, for every pooler embench trains with, with a model card written from the run (issue 32, item 1);
one table of pooling names serves the writer and the reader (issue 34)."""

from __future__ import annotations

import csv
import json
import shutil

import numpy as np
import pytest
import torch

import embench
from embench.core.errors import EmbenchError
from embench.data.root import DataRoot, file_sha256
from embench.data.training_sets import snli_triplets
from embench.models.pooling_names import LEGACY_KEYS, ST_MODES, pooler_of, st_mode
from embench.train import make_config, train
from embench.train.checkpoints import save_model_folder

pytestmark = pytest.mark.usefixtures("one_thread")
TEXTS = ["A man is playing a guitar.", "Two dogs run across a snowy field while the sun sets.", "short"]


# -- the one table of pooling names ---------------------------------------------------------------
def test_every_pooling_name_reads_back_as_the_pooler_it_was_written_for():
    from embench.models.poolers import POOLERS

    for pooler, mode in ST_MODES.items():
        assert POOLERS.canonical(pooler) == pooler  # an embench pooler, under its own name
        assert pooler_of({"pooling_mode": st_mode(pooler)}) == pooler  # sentence-transformers' newer form
        legacy = {key: m == mode for key, m in LEGACY_KEYS.items()}  # its older form: one boolean a mode
        assert pooler_of(legacy) == pooler
    assert st_mode("first_last_avg") is None and st_mode("cls") is None  # cls: Pooling + a Dense head, or none


def test_a_pooling_embench_lacks_or_two_modes_at_once_is_an_error_naming_the_file():
    with pytest.raises(EmbenchError, match=r"m/1_Pooling/config.json: unsupported .*mean_sqrt_len_tokens"):
        pooler_of({"pooling_mode": "mean_sqrt_len_tokens"}, "m/1_Pooling/config.json")
    with pytest.raises(EmbenchError, match="unsupported"):
        pooler_of({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": True})


STATES = torch.tensor([[[1.0, 2.0], [3.0, -1.0], [9.0, 9.0]],     # right padding: tokens 1, 2 real
                       [[9.0, 9.0], [2.0, 0.0], [4.0, 6.0]]])     # left padding: tokens 2, 3 real
MASK = torch.tensor([[1, 1, 0], [0, 1, 1]])


def test_weighted_mean_equals_a_hand_computation():
    """SGPT's weights: the i-th real token weighs i, counted from the first real token (left padding too)."""
    from embench.models.pooling import PoolInput, pool_weighted_mean

    hand = torch.tensor([[(1 * 1.0 + 2 * 3.0) / 3, (1 * 2.0 + 2 * -1.0) / 3],
                         [(1 * 2.0 + 2 * 4.0) / 3, (1 * 0.0 + 2 * 6.0) / 3]])
    torch.testing.assert_close(pool_weighted_mean(PoolInput((STATES,), MASK, 0, None)), hand)


@pytest.mark.slow  # importing sentence-transformers alone takes seconds
def test_weighted_mean_equals_sentence_transformers_weightedmean():
    from sentence_transformers.sentence_transformer.modules import Pooling

    from embench.models.pooling import PoolInput, pool_weighted_mean

    st = Pooling(2, pooling_mode="weightedmean")({"token_embeddings": STATES, "attention_mask": MASK})
    # the left-padded row agrees from sentence-transformers 6.2 (6.0 weighed its tokens 2, 3 by column; README)
    torch.testing.assert_close(pool_weighted_mean(PoolInput((STATES,), MASK, 0, None)), st["sentence_embedding"])


# -- a trained tiny checkpoint of each pooler ----------------------------------------------------
def _triplets_file(data_root, path, n=48):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["sent0", "sent1", "hard_neg"])
        w.writerows(snli_triplets(DataRoot.resolve(str(data_root)))[:n])
    return path


@pytest.fixture(scope="module")
def sup_simcse(tiny_bert_dir, data_root, tmp_path_factory):
    """The supervised SimCSE recipe (cls through the pooler head, the MLP kept) on a tiny BERT, evaluated."""
    out = tmp_path_factory.mktemp("sup")
    data = _triplets_file(data_root, out / "nli.csv")
    r = train(make_config(recipe="simcse-sup", model=str(tiny_bert_dir), data=[str(data)], data_root=str(data_root),
                          out=str(out / "run"), batch_size=8, max_length=24, max_steps=2, eval_steps=2, progress=False,
                          log_steps=1))
    return r, data


def _by_hand(folder, pooling):
    """The vectors from transformers' AutoModel at the folder's root, pooled by hand."""
    from transformers import AutoModel, AutoTokenizer

    model, tok = AutoModel.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)
    enc = tok(TEXTS, padding=True, truncation=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc)
    h, mask = out.last_hidden_state, enc["attention_mask"]
    m = mask.unsqueeze(-1).float()
    weights = torch.arange(1, h.shape[1] + 1).view(1, -1, 1) * m
    return {"cls": lambda: out.pooler_output, "cls_before_pooler": lambda: h[:, 0],
            "mean": lambda: (h * m).sum(1) / m.sum(1), "max": lambda: h.masked_fill(m == 0, -torch.inf).max(1).values,
            "last_token": lambda: h[torch.arange(len(TEXTS)), mask.sum(1) - 1],
            "weighted_mean": lambda: (h * weights).sum(1) / weights.sum(1)}[pooling]().numpy()


def _three_ways(folder, pooling):
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(folder), device="cpu").encode(TEXTS, convert_to_numpy=True)
    enc = embench.load_model(folder, device="cpu")
    ours = enc.encode_batch(TEXTS)
    np.testing.assert_allclose(st, ours, atol=1e-6)
    np.testing.assert_allclose(_by_hand(folder, pooling), ours, atol=1e-6)
    return enc


@pytest.mark.slow
@pytest.mark.parametrize("pooling", ["cls_before_pooler", "mean", "max", "last_token", "weighted_mean"])
def test_a_trained_checkpoint_loads_in_sentence_transformers_transformers_and_embench_with_equal_vectors(
        pooling, tiny_bert_dir, data_root, tmp_path):
    r = train(make_config(method="unsup-simcse", model=str(tiny_bert_dir), data=["corpora"], data_root=str(data_root),
                          out=str(tmp_path / "run"), batch_size=8, max_length=24, max_steps=2, max_examples=32,
                          eval_steps=0, progress=False, log_steps=1, pooling=pooling))
    folder = r.best_dir
    for f in ("config.json", "model.safetensors", "modules.json", "config_sentence_transformers.json", "1_Pooling/config.json",
              "README.md", "embench_training.json"):
        assert (folder / f).is_file(), f
    assert not (folder / "sentence-transformers").exists()  # one folder, not a second copy beside it
    enc = _three_ways(folder, pooling)
    assert (enc.pooling, enc.dense_modules) == (pooling, [])
    assert json.loads((folder / "config_sentence_transformers.json").read_text())["similarity_fn_name"] == "cosine"


@pytest.mark.slow
def test_the_supervised_simcse_checkpoint_keeps_its_pooler_head_as_a_dense_module(sup_simcse):
    """Issue 32: cls through BERT's pooler head was read by SentenceTransformer(path) as mean pooling."""
    r, _ = sup_simcse
    folder = r.best_dir
    kinds = [m["type"].rsplit(".", 1)[-1] for m in json.loads((folder / "modules.json").read_text())]
    assert kinds == ["Transformer", "Pooling", "Dense"]
    enc = _three_ways(folder, "cls")  # AutoModel's pooler_output
    assert (enc.pooling, enc.dense_modules) == ("cls", [])  # read back as embench's cls: the model's own head


@pytest.mark.slow
def test_the_model_card_says_the_recipe_data_steps_scores_and_version_of_the_run(sup_simcse, data_root):
    from embench.core.version import __version__
    from embench.train import RECIPES

    r, data = sup_simcse
    card = (r.best_dir / "README.md").read_text()
    assert card.startswith("---\n") and "library_name: sentence-transformers" in card
    recipe = RECIPES.get("simcse-sup")
    assert "`simcse-sup`" in card and recipe.cites in card and "SimCSE: Simple Contrastive Learning" in card
    # each option the recipe sets: the run's value beside the recipe's and its source; the departures show
    assert f"| `lr` | `5e-05` | `5e-05` | {recipe.sources['lr']} |" in card
    assert f"| `batch_size` | `8` | `512` | {recipe.sources['batch_size']} |" in card
    assert f"| `temperature` | `0.05` | `0.05` | {recipe.sources['temperature']} |" in card
    assert f"| `nli.csv` | a file | `{file_sha256(data)}` |" in card  # by its name, not this machine's path
    assert f"kept: step {r.best_step} of {r.steps}" in card and f"embench {__version__}" in card
    logged = [h for h in r.history if "eval/STSBenchmark-dev" in h and h["step"] == r.best_step][0]
    assert f"| STSBenchmark-dev | {100 * logged['eval/STSBenchmark-dev']:.2f} |" in card
    assert "PATH" not in card and "model_id" not in card  # nothing left for the reader to fill in
    # the score in the card is the score `embench run` gives the folder
    ev = embench.evaluate(r.best_dir, tasks=["STSBenchmark"], stsb_split="dev", data=data_root, save=False,
                          use_cache=False, progress=False, device="cpu")
    assert ev.records[0].main_score == pytest.approx(logged["eval/STSBenchmark-dev"], abs=1e-6)


# -- prompts, Normalize, what sentence-transformers cannot do, the older layout ----------------------
def _tiny(tiny_bert_dir):
    from transformers import AutoModel, AutoTokenizer

    return AutoModel.from_pretrained(tiny_bert_dir), AutoTokenizer.from_pretrained(tiny_bert_dir)


@pytest.mark.slow
def test_a_prefix_prompt_is_the_default_prompt_and_normalize_a_module(tiny_bert_dir, tmp_path):
    from sentence_transformers import SentenceTransformer

    model, tok = _tiny(tiny_bert_dir)
    folder = save_model_folder(model, tok, tmp_path / "best", pooling="mean", max_length=64, normalize=True,
                               meta={"method": "unsup-simcse", "prompt": "query: {text}", "step": 3})
    cfg = json.loads((folder / "config_sentence_transformers.json").read_text())
    # every prompt name (mteb asks for query and document) gives the prompt the model was trained with
    assert cfg["prompts"] == {"default": "query: ", "query": "query: ", "document": "query: "}
    assert cfg["default_prompt_name"] == "default"
    st = SentenceTransformer(str(folder), device="cpu")
    assert type(st[-1]).__name__ == "Normalize" and st.max_seq_length == 64
    enc = embench.load_model(folder, device="cpu")
    assert enc.settings.normalize and enc.settings.max_length == 64
    ours = enc.encode_batch(TEXTS)
    np.testing.assert_allclose(st.encode(TEXTS, convert_to_numpy=True), ours, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)
    plain = embench.load_model(tiny_bert_dir, pooling="mean", prompt="query: {text}", normalize=True, max_length=64)
    np.testing.assert_allclose(plain.encode_batch(TEXTS), ours, atol=1e-6)  # the prompt is applied, once


@pytest.mark.slow
@pytest.mark.parametrize("template", ['This sentence : "{text}" means in one word:"', "query: {text:period}"])
def test_a_prompt_with_text_after_the_sentence_leaves_a_hugging_face_folder_that_says_so(tiny_bert_dir, tmp_path,
                                                                                         template):
    """A prompt with words after ``{text}`` (PromptEOL, BeLLM) was written as a sentence-transformers folder with empty
    prompts: ``SentenceTransformer(path).encode(texts)`` silently gave other vectors (0.82 apart on a trained Llama).
    sentence-transformers' prompts are prefixes: the folder is a Hugging Face one whose card and metadata say why."""
    model, tok = _tiny(tiny_bert_dir)
    folder = save_model_folder(model, tok, tmp_path / "best", pooling="last_token", max_length=64,
                               meta={"method": "unsup-simcse", "prompt": template, "step": 1})
    assert not (folder / "modules.json").exists() and not (folder / "config_sentence_transformers.json").exists()
    meta = json.loads((folder / "embench_training.json").read_text())
    assert meta["sentence_transformers"] is False and "words after the text" in meta["sentence_transformers_missing"]
    card = (folder / "README.md").read_text()
    assert "sentence-transformers cannot give this model's vectors: its prompt" in card and "SentenceTransformer(\"" not in card
    enc = embench.load_model(folder, device="cpu")
    assert (enc.settings.prompt, enc.pooling) == (template, "last_token")  # embench reads both from the folder


def test_a_pooling_sentence_transformers_lacks_stays_a_hugging_face_folder_that_says_so(tiny_bert_dir, tmp_path):
    model, tok = _tiny(tiny_bert_dir)
    folder = save_model_folder(model, tok, tmp_path / "best", pooling="first_last_avg", max_length=64,
                               meta={"method": "unsup-simcse", "step": 1})
    assert not (folder / "modules.json").exists()
    meta = json.loads((folder / "embench_training.json").read_text())
    assert meta["sentence_transformers"] is False and "first_last_avg" in meta["sentence_transformers_missing"]
    assert "sentence-transformers cannot give this model's vectors" in (folder / "README.md").read_text()
    assert embench.load_model(folder).pooling == "first_last_avg"  # the trained pooling, from embench_training.json
    assert "or transformers' `AutoModel` with the pooling above" in (folder / "README.md").read_text()
    bidirectional = save_model_folder(model, tok, tmp_path / "bi", pooling="last_token", max_length=64,
                                      meta={"method": "bellm", "step": 1, "bidirectional_last": 1})
    card = (bidirectional / "README.md").read_text()  # AutoModel runs the last layer causally: not these vectors
    assert "use embench: transformers' `AutoModel` runs every layer causally" in card and "pooling above" not in card


def _old_layout(tiny_bert_dir, root):
    """What embench wrote before: a plain HF folder (pooling in embench_training.json) and beside it a
    ``sentence-transformers/`` copy in the older sentence-transformers format ([CLS] + Dense(tanh))."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(tiny_bert_dir, root)
    (root / "embench_training.json").write_text(json.dumps({"method": "sup-simcse", "pooling": "cls", "max_length": 64,
                                                            "sentence_transformers": False}))
    sub = root / "sentence-transformers"
    shutil.copytree(tiny_bert_dir, sub)
    (sub / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}]))
    (sub / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64, "do_lower_case": False}))
    (sub / "1_Pooling").mkdir()
    (sub / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32, **{
        k: k == "pooling_mode_cls_token" for k in LEGACY_KEYS}, "include_prompt": True}))
    (sub / "2_Dense").mkdir()
    (sub / "2_Dense" / "config.json").write_text(json.dumps({"in_features": 32, "out_features": 32, "bias": True,
                                                             "activation_function": "torch.nn.modules.activation.Tanh"}))
    weights = load_file(str(tiny_bert_dir / "model.safetensors"))
    save_file({"linear.weight": weights["pooler.dense.weight"], "linear.bias": weights["pooler.dense.bias"]},
              str(sub / "2_Dense" / "model.safetensors"))
    return sub


def test_checkpoints_of_the_older_layout_still_load_with_their_vectors(tiny_bert_dir, tmp_path):
    root = tmp_path / "best"
    sub = _old_layout(tiny_bert_dir, root)
    top, inner = embench.load_model(root, device="cpu"), embench.load_model(sub, device="cpu")
    assert (top.pooling, inner.pooling, inner.dense_modules) == ("cls", "cls", [])
    np.testing.assert_allclose(top.encode_batch(TEXTS), inner.encode_batch(TEXTS), atol=1e-6)
    np.testing.assert_allclose(inner.encode_batch(TEXTS), _by_hand(root, "cls"), atol=1e-6)


def test_a_square_tanh_dense_that_is_not_the_pooler_head_stays_a_dense_module(tiny_bert_dir, tmp_path):
    from safetensors.torch import load_file, save_file

    sub = _old_layout(tiny_bert_dir, tmp_path / "best")
    dense = load_file(str(sub / "2_Dense" / "model.safetensors"))
    save_file({"linear.weight": dense["linear.weight"] * 2, "linear.bias": dense["linear.bias"]},
              str(sub / "2_Dense" / "model.safetensors"))
    enc = embench.load_model(sub, device="cpu")
    assert (enc.pooling, enc.dense_modules) == ("cls_before_pooler", ["2_Dense"])
