"""Bidirectional last-K layers of a causal LM (BeLLM Eq. 4) in one stack (``mask`` mode), the setting through the
loader, named prompts, and the GGUF weight cache. The four modes against hand computations: test_bidirectional_modes.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import embench
from embench.core.errors import EmbenchError
from embench.core.hashing import stable_hash
from embench.evaluation.results import IDENTITY_ENCODER_FIELDS, record_key
from embench.models.bidirectional import MODES, bidirectional_layers, make_bidirectional
from embench.models.bidirectional_masks import key_padding, padding_only_mask
from embench.models.families import PROMPTS, apply_prompt, check_prompt

MIN = torch.finfo(torch.float32).min


def tiny_llama(attention: str, layers: int = 3):
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=64)
    return LlamaModel._from_config(cfg, attn_implementation=attention).eval()


IDS = torch.tensor([[0, 0, 5, 9, 3, 7], [4, 8, 2, 6, 11, 13]])
LEFT = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])


def full_attention_mask(mask2d: torch.Tensor, attention: str) -> torch.Tensor:
    """Independent reference: a 4-D mask with no causal part, given to the unpatched model."""
    allowed = mask2d.bool()[:, None, None, :].expand(mask2d.shape[0], 1, mask2d.shape[1], mask2d.shape[1])
    return allowed if attention == "sdpa" else torch.where(allowed, 0.0, MIN)


def test_key_padding_and_the_padding_only_mask_by_hand():
    # causal + padding masks as transformers builds them: left padding (2 pads) and right padding (1 pad), T = 3
    left = torch.tensor([[[[0, 0, 0], [0, 0, 0], [0, 0, 1]]]], dtype=torch.bool)  # row 0, 1: pads see nothing
    right = torch.tensor([[[[1, 0, 0], [1, 1, 0], [1, 1, 0]]]], dtype=torch.bool)  # the pad query sees the real keys
    hidden = torch.zeros(1, 3, 4)
    assert key_padding(left, hidden).tolist() == [[False, False, True]]
    assert key_padding(right, hidden).tolist() == [[True, True, False]]
    # an older SDPA path unmasks fully padded rows: still only the real key
    unmasked = torch.tensor([[[[1, 1, 1], [1, 1, 1], [0, 0, 1]]]], dtype=torch.bool)
    assert key_padding(unmasked, hidden).tolist() == [[False, False, True]]
    eager = torch.where(right, 0.0, MIN)
    assert key_padding(eager, hidden).tolist() == [[True, True, False]]
    assert key_padding(None, hidden).tolist() == [[True, True, True]]
    keys = torch.tensor([[True, True, False]])
    assert padding_only_mask(keys, right, 3, torch.bool).tolist() == [[[[True, True, False]] * 3]]
    built = padding_only_mask(keys, eager, 3, torch.float32)
    assert built.tolist() == [[[[0.0, 0.0, MIN]] * 3]]


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_k0_is_the_original_and_all_layers_equal_full_attention(attention, one_thread):
    model, reference = tiny_llama(attention), tiny_llama(attention)
    original = reference(input_ids=IDS, attention_mask=LEFT).last_hidden_state
    make_bidirectional(model, 0)
    assert torch.equal(model(input_ids=IDS, attention_mask=LEFT).last_hidden_state, original)
    make_bidirectional(model, 3, "mask")
    assert bidirectional_layers(model) == [0, 1, 2]
    bi = model(input_ids=IDS, attention_mask=LEFT).last_hidden_state
    full = reference(input_ids=IDS, attention_mask=full_attention_mask(LEFT, attention)).last_hidden_state
    real = LEFT.bool()
    torch.testing.assert_close(bi[real], full[real], atol=1e-6, rtol=1e-5)
    assert not torch.allclose(bi[real], original[real], atol=1e-3)  # the causal mask really went
    make_bidirectional(model, 0)  # and can be put back
    assert torch.equal(model(input_ids=IDS, attention_mask=LEFT).last_hidden_state, original)


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_only_the_last_k_layers_change(attention, one_thread):
    model, reference = tiny_llama(attention), tiny_llama(attention)
    make_bidirectional(model, 1, "mask")
    assert bidirectional_layers(model) == [2]
    got = model(input_ids=IDS, attention_mask=LEFT, output_hidden_states=True).hidden_states
    want = reference(input_ids=IDS, attention_mask=LEFT, output_hidden_states=True).hidden_states
    for layer in range(3):  # embedding output and layers 1-2 stay causal
        assert torch.equal(got[layer], want[layer])
    assert not torch.allclose(got[3][:, 2], want[3][:, 2], atol=1e-3)  # an early token now sees the later ones


def test_padding_never_receives_attention_in_bidirectional_layers(one_thread):
    model = tiny_llama("eager")
    make_bidirectional(model, 2, "mask")
    out = model(input_ids=IDS, attention_mask=LEFT, output_attentions=True)
    for att in out.attentions[1:]:  # B x heads x T x T
        assert torch.all(att[0, :, :, :2] == 0)  # no query looks at the two pads of row 0
        assert torch.all(att[0, :, 2:, 2:].sum(-1).sub(1).abs() < 1e-5)
        assert torch.all(att[0, :, 2, 3:] > 0)  # an early real token attends to later ones
    # what the pad positions hold cannot reach the real tokens
    other = IDS.clone()
    other[0, :2] = torch.tensor([17, 23])
    a = model(input_ids=IDS, attention_mask=LEFT).last_hidden_state[0, 2:]
    b = model(input_ids=other, attention_mask=LEFT).last_hidden_state[0, 2:]
    torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


@pytest.fixture(scope="module")
def tiny_llama_dir(tiny_model):
    from transformers import LlamaConfig, LlamaModel

    return tiny_model("tiny-llama-bi", lambda vocab: LlamaModel(LlamaConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
        intermediate_size=64, max_position_embeddings=128)))


TEXTS = ["A man plays a guitar.", "A much longer sentence that forces padding of the first one, and more."]


@pytest.mark.parametrize("mode", ["sum", "mask"])
@pytest.mark.parametrize("last", [1, 2])
@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_embeddings_agree_under_left_and_right_padding_and_alone(tiny_llama_dir, last, mode, one_thread):
    """The modes that mask padding give a text the same vector whatever its batch pads it to."""
    enc = embench.load_model(tiny_llama_dir, bidirectional_last=last, bidirectional_mode=mode, prompt="bellm")
    alone = [enc.encode_batch([t])[0] for t in TEXTS]
    left = enc.encode_batch(TEXTS)
    enc.tokenizer.padding_side = "right"
    right = enc.encode_batch(TEXTS)
    for i in range(2):
        np.testing.assert_allclose(left[i], alone[i], atol=1e-5)
        np.testing.assert_allclose(right[i], alone[i], atol=1e-5)
    causal = embench.load_model(tiny_llama_dir, prompt="bellm").encode_batch(TEXTS)
    if last == 1 and mode == "mask":
        # the last token already sees every token in a causal layer, and the layers below are unchanged:
        # with last-token pooling, one bidirectional layer in the stack gives the causal model's vectors exactly
        np.testing.assert_allclose(left, causal, atol=1e-5)
        pooled = embench.load_model(tiny_llama_dir, bidirectional_last=1, bidirectional_mode="mask",
                                    pooling="mean").encode_batch(TEXTS)
        assert not np.allclose(pooled, embench.load_model(tiny_llama_dir, pooling="mean").encode_batch(TEXTS), atol=1e-3)
    else:  # Eq. 5's sum changes the last token's vector from K = 1 on
        assert not np.allclose(causal, left, atol=1e-3)


@pytest.mark.parametrize("mode", ["billm", "sum-code"])
def test_the_modes_that_attend_padding_give_a_padded_text_another_vector(tiny_llama_dir, mode, one_thread):
    """billm and the AnglE code attend padding in their bidirectional layers: a text padded in a batch gets
    another vector than alone (the longest text, unpadded, keeps its own)."""
    enc = embench.load_model(tiny_llama_dir, bidirectional_last=1, bidirectional_mode=mode, prompt="bellm")
    alone = [enc.encode_batch([t])[0] for t in TEXTS]
    batch = enc.encode_batch(TEXTS)
    assert not np.allclose(batch[0], alone[0], atol=1e-3)  # the short, padded one
    np.testing.assert_allclose(batch[1], alone[1], atol=1e-5)


def test_the_setting_is_in_the_cache_key_provenance_and_record_identity(tiny_llama_dir):
    plain, bi = embench.load_model(tiny_llama_dir), embench.load_model(tiny_llama_dir, bidirectional_last=1)
    assert plain.cache_key() != bi.cache_key()
    assert embench.load_model(tiny_llama_dir, bidirectional_last=0).cache_key() == plain.cache_key()
    assert bi.describe()["bidirectional_last"] == 1 and "bidirectional_last" not in plain.describe()
    assert bi.describe()["bidirectional_mode"] == "sum" and "bidirectional_mode" not in plain.describe()
    assert record_key("STS12", plain.describe(), {}) != record_key("STS12", bi.describe(), {})
    modes = [embench.load_model(tiny_llama_dir, bidirectional_last=1, bidirectional_mode=m) for m in MODES]
    assert len({m.cache_key() for m in modes}) == len({record_key("STS12", m.describe(), {}) for m in modes}) == 4
    # a record stored before the modes (K, no mode: mask) keeps its key, which no new record takes
    old = {k: v for k, v in modes[2].describe().items() if k != "bidirectional_mode"}
    ident = {k: old.get(k) for k in IDENTITY_ENCODER_FIELDS} | {"bidirectional_last": 1}
    assert record_key("STS12", old, {}) == stable_hash({"task": "STS12", "encoder": ident, "protocol": {}}, 16)
    assert record_key("STS12", old, {}) not in {record_key("STS12", m.describe(), {}) for m in modes}


def test_bad_bidirectional_settings_and_prompts_are_clear_errors(tiny_llama_dir, tiny_bert_dir):
    with pytest.raises(EmbenchError, match=r"bidirectional_last=1: .*tiny-bert.* is not a decoder LLM"):
        embench.load_model(tiny_bert_dir, bidirectional_last=1)
    with pytest.raises(EmbenchError, match=r"bidirectional_last=3 is more than the 2 layers of"):
        embench.load_model(tiny_llama_dir, bidirectional_last=3)
    with pytest.raises(EmbenchError, match=r"bidirectional_last must be 0 or more"):
        embench.load_model(tiny_llama_dir, bidirectional_last=-1)
    with pytest.raises(EmbenchError, match=r"bidirectional_mode='summ': choose one of sum, sum-code, mask, billm"):
        embench.load_model(tiny_llama_dir, bidirectional_last=1, bidirectional_mode="summ")
    with pytest.raises(EmbenchError, match=r"bidirectional_mode='billm' needs bidirectional_last=K"):
        embench.load_model(tiny_llama_dir, bidirectional_mode="billm")
    with pytest.raises(EmbenchError, match=r"has no \{text\}.*bellm, bellm-code, bellm-eval, prompteol, none"):
        embench.load_model(tiny_llama_dir, prompt="The representative word is:")
    assert check_prompt("bellm") == 'The representative word for {text} is:"' == PROMPTS["bellm"]
    assert check_prompt("PromptEOL") == 'This sentence : "{text}" means in one word:"'
    assert check_prompt("none") == ""
    assert embench.load_model(tiny_llama_dir, prompt="bellm").settings.prompt == PROMPTS["bellm"]


def test_the_authors_evaluation_prompt_ends_each_sentence_with_a_period():
    """4AI/BeLLM eval_sts.py: '.' appended unless the sentence ends in . ? " or ', then a final '?' becomes '.'."""
    texts = ["A man plays", "Is it raining?", 'He said "hi"', "Done.", "It's 'x'", ""]
    want = ["A man plays.", "Is it raining.", 'He said "hi"', "Done.", "It's 'x'", ""]
    template = check_prompt("bellm-eval")
    assert template == 'The representative word for sentence {text:period} is:"'
    assert apply_prompt(template, texts) == [f'The representative word for sentence {w} is:"' for w in want]
    assert apply_prompt("{text}", texts) == texts  # the plain form is untouched
    with pytest.raises(EmbenchError, match="only \\{text\\} may stand in braces"):
        check_prompt("{text} and {text:nope}")


@pytest.mark.slow
def test_dequantised_gguf_weights_are_read_back_from_the_cache(tmp_path, monkeypatch, minilm_path):
    from transformers import AutoTokenizer

    from embench.models.gguf_cache import cached_gguf_folder, load_gguf_cached

    monkeypatch.setenv("EMBENCH_GGUF_CACHE", str(tmp_path))
    calls = []

    def read():  # stands for transformers' dequantisation: a model that save_pretrained refuses, as a GGUF one
        calls.append(1)
        model = tiny_llama("sdpa", layers=1)
        model.config.quantization_config = {"quant_method": "gguf"}
        model.save_pretrained = lambda *a, **k: pytest.fail("save_pretrained refuses GGUF-loaded models")
        return model

    tok = AutoTokenizer.from_pretrained(minilm_path)
    assert cached_gguf_folder("abc123") is None
    first = load_gguf_cached("abc123", read, {}, tok)
    second = load_gguf_cached("abc123", lambda: pytest.fail("dequantised again"), {})
    assert calls == [1] and cached_gguf_folder("abc123") == tmp_path / "abc123"
    assert getattr(second.config, "quantization_config", None) is None
    for (n1, p1), (n2, p2) in zip(first.state_dict().items(), second.state_dict().items(), strict=True):
        assert n1 == n2 and torch.equal(p1, p2)
    again = AutoTokenizer.from_pretrained(tmp_path / "abc123")
    assert again("A man plays a guitar.")["input_ids"] == tok("A man plays a guitar.")["input_ids"]


def test_a_gguf_file_of_an_architecture_transformers_cannot_read_is_named_with_those_it_can(tmp_path):
    import gguf

    path = tmp_path / "odd.gguf"
    writer = gguf.GGUFWriter(str(path), arch="madeup")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((4, 2), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(EmbenchError, match=r"odd\.gguf: GGUF model with architecture madeup .* reads GGUF files of .*llama") as e:
        embench.load_model(path)
    assert "tokenizer" not in str(e.value).split("architectures:")[1]
