"""Model families: detection, per-family defaults, the patch hook, and prompts."""

from __future__ import annotations

import numpy as np
import pytest

import embench
from embench.core.errors import EmbenchError
from embench.models.families import FAMILIES, Family


@pytest.fixture(scope="module")
def tiny_llama_dir(tiny_model):
    """A randomly initialised 2-layer Llama (hidden 32) with MiniLM's tokenizer: a decoder LLM in seconds."""
    from transformers import LlamaConfig, LlamaModel

    return tiny_model("tiny-llama", lambda vocab: LlamaModel(LlamaConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
        intermediate_size=64, max_position_embeddings=128)))


def test_each_kind_of_checkpoint_gets_its_family_defaults(tiny_llama_dir, tiny_bert_dir, minilm_path):
    llm = embench.load_model(tiny_llama_dir, dtype=None, device="cpu")
    assert (llm.pooling, llm.tokenizer.padding_side, llm.settings.dtype) == ("last_token", "left", "fp32")  # bf16 on GPUs
    assert FAMILIES.get("causal-lm").default_dtype("cuda") == "bf16"
    assert embench.load_model(tiny_bert_dir).pooling == "cls"  # SimCSE's default for plain encoders
    assert embench.load_model(minilm_path).pooling == "mean"  # the sentence-transformers folder's own
    # left padding and last-token pooling: a text's vector does not depend on what it is batched with
    alone = llm.encode_batch(["A man plays a guitar."])
    padded = llm.encode_batch(["A man plays a guitar.", "A much longer sentence that forces padding of the first one."])
    np.testing.assert_allclose(alone[0], padded[0], atol=1e-5)


def test_without_a_dtype_a_gpu_runs_the_family_s_default(tiny_llama_dir, tiny_bert_dir, monkeypatch):
    """No --dtype is the family's dtype: bf16 for a decoder LLM on a GPU, fp32 for an encoder (and on a CPU). Before,
    load_model's own default (fp32) stood in for it, so `embench run -m Qwen/...` on a GPU ran in fp32."""
    from embench.models import loader
    from embench.models.as_encoder import as_encoder

    monkeypatch.setattr(loader, "pick_device", lambda device: device or "cuda")  # the settings only: nothing is run
    assert embench.load_model(tiny_llama_dir).settings.dtype == "bf16"
    assert as_encoder(str(tiny_llama_dir), {}).settings.dtype == "bf16"  # the CLI's and evaluate()'s path
    assert embench.load_model(tiny_llama_dir, dtype="fp32").settings.dtype == "fp32"  # asked for: kept
    assert embench.load_model(tiny_bert_dir).settings.dtype == "fp32"
    assert embench.load_model(tiny_llama_dir, device="cpu").settings.dtype == "fp32"


@pytest.mark.slow
def test_a_sentence_transformers_folder_of_a_decoder_is_a_causal_lm(tiny_llama_dir, tmp_path, monkeypatch):
    """A decoder saved as a sentence-transformers folder (e5-mistral, gte-Qwen2, one embench trained from a Llama) was
    the sentence-transformers family: right padding, fp32 on a GPU, and --bidirectional-last refused ("not a decoder
    LLM"), so a BeLLM adapter trained on it could not be loaded. It is a causal LM that keeps the folder's reading."""
    import json
    import shutil

    from transformers import BertConfig, LlamaConfig

    from embench.models import loader
    from embench.models.families import detect

    assert detect(LlamaConfig(), st_folder=True).name == "causal-lm"  # the loader's and train/backbone.py's one rule
    assert detect(BertConfig(), st_folder=True).name == "sentence-transformers"
    folder = tmp_path / "st-llama"
    shutil.copytree(tiny_llama_dir, folder)
    (folder / "1_Pooling").mkdir()
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 48, "do_lower_case": False}))
    enc = embench.load_model(folder, device="cpu")
    assert (enc.pooling, enc.settings.max_length, enc.settings.normalize) == ("mean", 48, True)  # the folder's own
    assert enc.tokenizer.padding_side == "left"
    assert embench.load_model(folder, device="cpu", bidirectional_last=1).settings.extra["bidirectional_last"] == 1
    monkeypatch.setattr(loader, "pick_device", lambda device: device or "cuda")  # the settings only: nothing is run
    assert embench.load_model(folder).settings.dtype == "bf16"


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_a_failing_family_hook_names_the_family_and_the_model_and_stores_nothing(tiny_bert_dir, data_root, tmp_path):
    def broken(model):
        raise RuntimeError("no attention module to patch")

    FAMILIES.add("broken-test-family", Family("broken-test-family", "a hook that fails", patch=broken))
    enc = embench.load_model(tiny_bert_dir, family="broken-test-family")
    with pytest.raises(EmbenchError, match=r"model family 'broken-test-family'.*failed on .*tiny-bert.*no attention module"):
        embench.evaluate(enc, tasks=["STS12"], data=data_root, results_dir=tmp_path / "results", use_cache=False)
    assert not list((tmp_path / "results").rglob("*.json"))
    with pytest.raises(EmbenchError, match="unknown model family 'causal-ln'. Did you mean 'causal-lm'"):
        embench.load_model(tiny_bert_dir, family="causal-ln")


def test_a_family_hook_changes_the_model_before_any_text_is_encoded(tiny_bert_dir):
    def halve_embeddings(model):
        model.embeddings.word_embeddings.weight.data *= 0.5

    FAMILIES.add("halved-test-family", Family("halved-test-family", "scales the embeddings", patch=halve_embeddings))
    plain = embench.load_model(tiny_bert_dir).encode_batch(["a dog"])
    patched = embench.load_model(tiny_bert_dir, family="halved-test-family")
    assert not np.allclose(plain, patched.encode_batch(["a dog"]))
    assert embench.load_model(tiny_bert_dir).cache_key() != patched.cache_key()


@pytest.mark.slow
def test_a_prompt_of_the_text_alone_is_no_prompt(tiny_bert_dir):
    """--prompt '{text}' changes no text but got a cache key (and records) of its own; --prompt none gave the default's."""
    from embench.models.families import check_prompt

    assert check_prompt("{text}") == check_prompt("none") == ""
    plain, same = embench.load_model(tiny_bert_dir, prompt="none"), embench.load_model(tiny_bert_dir, prompt="{text}")
    assert same.settings.prompt == "" and same.cache_key() == plain.cache_key()


def test_a_prompt_whose_text_is_in_double_braces_is_refused_and_a_repeated_text_kept():
    """'{{text}}' passed the substring check and formatted to the constant '{text}': every sentence the same input,
    found only as an undefined score that named no option."""
    from embench.models.families import check_prompt

    with pytest.raises(EmbenchError, match=r"^--prompt '\{\{text\}\}' has no \{text\} that takes the sentence"):
        check_prompt("{{text}}")
    with pytest.raises(EmbenchError, match=r"has no \{text\} that takes"):
        check_prompt("Say {{text}}: {{{{text}}}}")
    assert check_prompt("Rewrite: {text}. Again: {text}") == "Rewrite: {text}. Again: {text}"  # echo embeddings
    assert check_prompt("{{x}} {text:period}") == "{{x}} {text:period}"


@pytest.mark.slow
def test_a_prompt_needs_text_changes_the_vectors_and_is_recorded(tiny_llama_dir, data_root, tmp_path):
    with pytest.raises(EmbenchError, match=r"^prompt='Summarise:' has no \{text\}"):
        embench.load_model(tiny_llama_dir, prompt="Summarise:")
    with pytest.raises(EmbenchError, match="only {text} may stand in braces"):
        embench.load_model(tiny_llama_dir, prompt="{text} in {lang}")
    prompt = 'This sentence : "{text}" means in one word:"'
    plain, prompted = embench.load_model(tiny_llama_dir), embench.load_model(tiny_llama_dir, prompt=prompt)
    assert plain.cache_key() != prompted.cache_key()
    assert not np.allclose(plain.encode_batch(["a dog"]), prompted.encode_batch(["a dog"]))
    ev = embench.evaluate(tiny_llama_dir, tasks=["STSBenchmark"], prompt=prompt, data=data_root,
                          results_dir=tmp_path, use_cache=False, stsb_split="dev")
    assert ev.records[0].encoder["prompt"] == prompt


@pytest.mark.slow
def test_a_checkpoint_trained_with_a_prompt_is_encoded_with_it(tiny_llama_dir, data_root, tmp_path):
    import gzip

    from embench.train import make_config, train

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(gzip.open(data_root / "corpora" / "wiki1m-prefix.txt.gz", "rt").read().splitlines()[:64]))
    prompt = 'The representative word for {text} is:"'  # BeLLM §3
    r = train(make_config(method="unsup-simcse", model=str(tiny_llama_dir), data=[str(corpus)], out=str(tmp_path / "run"),
                          data_root=str(data_root), prompt=prompt, mlp="none", max_steps=2, batch_size=8, max_length=32,
                          eval_steps=0, progress=False))
    enc = embench.load_model(r.best_dir)
    assert (enc.settings.prompt, enc.pooling) == (prompt, "last_token")
