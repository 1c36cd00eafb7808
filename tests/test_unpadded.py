"""``--unpadded``: a batch runs as one row of its real tokens with variable-length attention, and its states go back
to the padded layout (``models/unpadded_batch.py``, ``models/varlen_attention.py``). On a CPU the attention is the
reference (SDPA under the texts' block-diagonal mask), so each supported family's vectors are compared here with
transformers' padded forward; the flash kernel itself runs on a GPU only (``benchmarks/encode_gpu.py --unpadded``)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch
from host_reads import HostReads
from transformers import (
    AutoTokenizer,
    GPT2Config,
    LlamaConfig,
    LlamaModel,
    MistralConfig,
    MistralModel,
    Qwen2Config,
    Qwen2Model,
    Qwen3Config,
    Qwen3Model,
    RobertaConfig,
    RobertaModel,
    XLMRobertaConfig,
    XLMRobertaModel,
)

import embench
import embench.encoding.batching as batching
import embench.encoding.engine as engine_mod
import embench.models.varlen_attention as varlen
from embench.core.errors import EmbenchError
from embench.encoding.engine import Engine, embed_views
from embench.models.unpadded_batch import pack, patched_attention, why_not_unpadded
from embench.models.varlen_attention import use_varlen, why_not_flash

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["a man plays a guitar", "two dogs run through the deep snow, barking at each other as they go", "rain",
         "the cat sat on the mat", "a woman is slicing an onion in the kitchen", "yes"]
SHAPE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, max_position_embeddings=130)
FAMILIES = {  # grouped-query attention where the family has it (2 key/value heads for 4 query heads)
    "roberta": lambda vocab, pad: RobertaModel(RobertaConfig(vocab_size=vocab, pad_token_id=pad, **SHAPE)),
    "xlm-roberta": lambda vocab, pad: XLMRobertaModel(XLMRobertaConfig(vocab_size=vocab, pad_token_id=pad, **SHAPE)),
    "llama": lambda vocab, pad: LlamaModel(LlamaConfig(vocab_size=vocab, num_key_value_heads=2, **SHAPE)),
    "qwen2": lambda vocab, pad: Qwen2Model(Qwen2Config(vocab_size=vocab, num_key_value_heads=2, **SHAPE)),
    "qwen3": lambda vocab, pad: Qwen3Model(Qwen3Config(vocab_size=vocab, num_key_value_heads=2, head_dim=8, **SHAPE)),
    "mistral": lambda vocab, pad: MistralModel(MistralConfig(vocab_size=vocab, num_key_value_heads=2, sliding_window=None,
                                                             **SHAPE)),
}


@pytest.fixture(scope="module")
def family_dirs(tiny_model, minilm_path):
    pad = AutoTokenizer.from_pretrained(minilm_path).pad_token_id
    return {name: tiny_model(f"tiny-{name}", lambda vocab, make=make: make(vocab, pad)) for name, make in FAMILIES.items()}


@pytest.fixture
def attention_calls(monkeypatch):
    """How many times the unpadded attention ran (its CPU reference)."""
    calls = []
    real = varlen.reference_attention
    monkeypatch.setattr(varlen, "reference_attention", lambda *a, **k: calls.append(a[0].shape[0]) or real(*a, **k))
    return calls


def _unpadded(folder, **options):
    enc = embench.load_model(folder, device="cpu", **options)
    enc.unpadded = True  # what load_model(..., unpadded=True) sets on a GPU in bf16; here the reference attention runs
    return enc


def _pair(folder, **options):
    padded = Engine(embench.load_model(folder, device="cpu", **options), cache_dir=None).embed(TEXTS)
    return padded, Engine(_unpadded(folder, **options), cache_dir=None).embed(TEXTS)


@pytest.mark.parametrize("pooling", ["mean", "cls", "max", "weighted_mean", "first_last_avg"])
def test_bert_gives_the_padded_forward_s_vectors_under_every_pooler(tiny_bert_dir, attention_calls, pooling):
    padded, unpadded = _pair(tiny_bert_dir, pooling=pooling)
    np.testing.assert_allclose(unpadded, padded, atol=2e-6, rtol=0)
    real_tokens = sum(len(ids) for ids in embench.load_model(tiny_bert_dir, device="cpu").pretokenize(TEXTS)["input_ids"])
    assert attention_calls == [real_tokens] * 2  # one row of every real token, in each of the 2 layers


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_each_supported_family_gives_the_padded_forward_s_vectors(family_dirs, attention_calls, family):
    """RoBERTa's positions start after its padding index; the decoders are left-padded with rotary positions, so a
    text's offset in its padded row changes nothing; Llama, Qwen2/3 and Mistral attend with 2 key/value heads."""
    for pooling in ("mean", "last_token"):
        padded, unpadded = _pair(family_dirs[family], pooling=pooling)
        np.testing.assert_allclose(unpadded, padded, atol=1e-5, rtol=0)
    assert len(attention_calls) == 4


def test_a_model_loaded_before_it_was_set_to_run_unpadded_still_keeps_texts_apart(tiny_bert_dir):
    padded = Engine(embench.load_model(tiny_bert_dir, device="cpu"), cache_dir=None).embed(TEXTS)
    enc = embench.load_model(tiny_bert_dir, device="cpu")
    enc.model  # noqa: B018  (loaded under SDPA)
    enc.unpadded = True
    np.testing.assert_allclose(Engine(enc, cache_dir=None).embed(TEXTS), padded, atol=2e-6, rtol=0)
    assert enc.model.config._attn_implementation == varlen.NAME


def test_views_of_every_layer_in_one_pass_match(tiny_bert_dir):
    def views(enc):
        return [Engine(enc.view(layer=layer, pooling=pooling), cache_dir=None) for layer in (0, 1, 2) for pooling in ("mean", "cls")]

    padded = embed_views(views(embench.load_model(tiny_bert_dir, device="cpu")), TEXTS)
    unpadded = embed_views(views(_unpadded(tiny_bert_dir)), TEXTS)
    for a, b in zip(padded, unpadded, strict=True):
        np.testing.assert_allclose(b, a, atol=2e-6, rtol=0)


def test_the_packed_row_by_hand():
    """Two texts of 2 and 3 tokens in a batch of width 3, right- and left-padded."""
    class Config:
        model_type = "bert"

    ids = torch.tensor([[5, 6, 0], [7, 8, 9]])
    enc = {"input_ids": ids, "attention_mask": torch.tensor([[1, 1, 0], [1, 1, 1]])}
    right = pack(enc, 5, Config(), left_padded=False)
    assert right.inputs["input_ids"].tolist() == [[5, 6, 7, 8, 9]]
    assert right.inputs["position_ids"].tolist() == [[0, 1, 0, 1, 2]]
    assert right.inputs["cu_seq_lens_q"].tolist() == [0, 2, 5] and right.inputs["max_length_q"] == 3
    assert right.index.tolist() == [0, 1, 3, 4, 5]
    left = pack({"input_ids": torch.tensor([[0, 5, 6], [7, 8, 9]]), "attention_mask": torch.tensor([[0, 1, 1], [1, 1, 1]])},
                5, Config(), left_padded=True)
    assert left.inputs["input_ids"].tolist() == [[5, 6, 7, 8, 9]]
    assert left.inputs["position_ids"].tolist() == [[0, 1, 0, 1, 2]]  # from each text's first real token
    states = torch.arange(5.0).reshape(1, 5, 1)
    assert left.unpack(states)[..., 0].tolist() == [[0.0, 0.0, 1.0], [2.0, 3.0, 4.0]]  # zero at the padding

    class Roberta:
        model_type, pad_token_id = "roberta", 1

    assert pack(enc, 5, Roberta(), left_padded=False).inputs["position_ids"].tolist() == [[2, 3, 2, 3, 4]]


@pytest.mark.parametrize("causal", [False, True])
def test_the_reference_attention_is_each_text_s_own_attention(causal):
    torch.manual_seed(0)
    lengths = [3, 1, 4]
    q = torch.randn(sum(lengths), 4, 8)
    k, v = torch.randn(sum(lengths), 2, 8), torch.randn(sum(lengths), 2, 8)  # 2 key/value heads for 4 query heads
    cu = torch.tensor([0, 3, 4, 8], dtype=torch.int32)
    out = varlen.reference_attention(q, k, v, cu, causal, None)
    for a, b in zip(cu[:-1].tolist(), cu[1:].tolist(), strict=True):
        qi, ki, vi = (t[a:b].transpose(0, 1) for t in (q, k, v))
        ki, vi = ki.repeat_interleave(2, 0), vi.repeat_interleave(2, 0)
        weights = torch.softmax(qi @ ki.transpose(1, 2) / 8 ** 0.5 + (
            torch.full((b - a, b - a), float("-inf")).triu(1) if causal else 0), -1)
        torch.testing.assert_close(out[a:b], (weights @ vi).transpose(0, 1), atol=1e-6, rtol=0)


@pytest.mark.parametrize("signature", ["is_causal", "window_size"])
def test_the_flash_kernel_gets_causality_and_grouped_heads_as_its_torch_release_names_them(monkeypatch, signature):
    seen = {}
    if signature == "is_causal":  # torch 2.10's form: no grouped-query switch, so keys and values are repeated
        def kernel(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, *, is_causal=False, scale=None):
            seen.update(is_causal=is_causal, kv_heads=key.shape[1], max_q=max_q)
            return query
    else:
        def kernel(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, *, scale=None, window_size=(-1, -1),
                   enable_gqa=False):
            seen.update(window_size=window_size, enable_gqa=enable_gqa, kv_heads=key.shape[1], max_q=max_q)
            return query

    monkeypatch.setattr(varlen, "FLASH_KERNEL", kernel)
    monkeypatch.setattr(varlen, "FLASH_PARAMS", frozenset(inspect.signature(kernel).parameters))
    q, kv = torch.zeros(5, 4, 8), torch.zeros(5, 2, 8)
    varlen._flash(q, kv, kv, torch.tensor([0, 2, 5], dtype=torch.int32), 3, True, None)
    if signature == "is_causal":
        assert seen == {"is_causal": True, "kv_heads": 4, "max_q": 3}
        varlen._flash(q, kv, kv, torch.tensor([0, 2, 5], dtype=torch.int32), 3, True, None, repeat_kv=False)
        assert seen["kv_heads"] == 2  # the probe's form: the heads as they are
    else:
        assert seen == {"window_size": (-1, 0), "enable_gqa": True, "kv_heads": 2, "max_q": 3}


def test_where_it_cannot_run_load_model_says_why_and_stays_padded(tiny_bert_dir, tiny_model):
    with pytest.warns(UserWarning, match="--unpadded .* no effect here: variable-length attention needs a CUDA GPU"):
        enc = embench.load_model(tiny_bert_dir, device="cpu", unpadded=True)
    assert enc.unpadded is False
    bert = enc.config
    assert "bf16/fp16 only" in why_not_unpadded(bert, "cuda", torch.float32)
    billm = patched_attention({"bidirectional_last": 1, "bidirectional_mode": "billm"})
    assert "--bidirectional-mode billm attends padding" in why_not_unpadded(bert, "cuda", torch.bfloat16, billm)
    assert patched_attention({"bidirectional_last": 1, "bidirectional_mode": "sum"}) is None  # a packed row opens it too
    assert "drops attention weights in training" in why_not_unpadded(bert, "cuda", torch.bfloat16, training=True)
    assert "gpt2 models are not run unpadded" in why_not_unpadded(GPT2Config(), "cuda", torch.bfloat16)
    assert "sliding-window" in why_not_unpadded(MistralConfig(sliding_window=4096), "cuda", torch.bfloat16)
    # the model passes; only this machine's reasons remain (no GPU here)
    assert why_not_unpadded(Qwen2Config(), "cuda", torch.bfloat16, training=True) == why_not_flash("cuda", torch.bfloat16)
    with pytest.raises(EmbenchError, match="cuda_graphs and unpadded cannot be combined"):
        embench.load_model(tiny_bert_dir, device="cpu", unpadded=True, cuda_graphs=True)


@pytest.mark.parametrize("pooling", ["cls", "cls_before_pooler"])
def test_cls_under_left_padding_reads_each_text_s_first_real_token_padded_or_packed(tiny_llama_dir, attention_calls,
                                                                                    pooling):
    """Column 0 of a left-padded batch is padding in all but the longest text: cls read it, so a text's vector (and
    STS-B's score) changed with the batch size. Each text's first real token is its vector alone, padded or packed."""
    enc = embench.load_model(tiny_llama_dir, device="cpu", pooling=pooling)
    assert enc.tokenizer.padding_side == "left"
    together = enc.encode_batch(TEXTS)
    alone = np.concatenate([enc.encode_batch([t]) for t in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-5, rtol=0)
    padded, packed = _pair(tiny_llama_dir, pooling=pooling)
    assert attention_calls and np.abs(packed).min() > 0  # packed ran, and no row is the zeros of a padding slot
    np.testing.assert_allclose(packed, padded, atol=1e-5, rtol=0)
    # vectors of the old reading stay apart in the cache and the results
    assert enc.settings.extra["first_real_token"] is True and "first_real_token" not in embench.load_model(
        tiny_llama_dir, device="cpu", pooling="mean").settings.extra


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_an_unpadded_pass_on_the_gpu_path_reads_nothing_back(tiny_bert_dir, tiny_llama_dir, monkeypatch):
    """The engine's GPU path forced on the CPU, unpadded: the row's size is the host's count and its index comes from
    ``nonzero_static``, so nothing is read back; a decoder no longer meets transformers' causal-mask check either."""
    monkeypatch.setattr(batching, "GPU_FIRST_CHUNK", 4)
    monkeypatch.setattr(batching, "GPU_TOKENIZE_CHUNK", 4)
    monkeypatch.setattr(engine_mod, "FLUSH_EVERY", 3)
    gpu_batches = engine_mod._batches
    monkeypatch.setattr(engine_mod, "_batches", lambda engine, ts, on_cpu: gpu_batches(engine, ts, False))
    for folder in (tiny_bert_dir, tiny_llama_dir):
        reference = Engine(embench.load_model(folder, device="cpu"), batch_size=4).embed(TEXTS)
        enc = _unpadded(folder)
        with HostReads() as reads:
            out = Engine(enc, batch_tokens=40, cache_dir=None).embed(TEXTS)
        assert reads.calls == []
        np.testing.assert_allclose(out, reference, atol=1e-5, rtol=0)


def test_a_batch_out_of_memory_is_split_and_stays_unpadded(tiny_bert_dir, attention_calls, monkeypatch):
    """The halves of a batch that did not fit keep their own host lengths: the same vectors."""
    reference = Engine(embench.load_model(tiny_bert_dir, device="cpu"), cache_dir=None).embed(TEXTS)
    enc = _unpadded(tiny_bert_dir)
    real = type(enc)._hidden

    def small_memory(self, enc_, all_layers):
        if enc_["attention_mask"].shape[0] > 3:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(self, enc_, all_layers)

    monkeypatch.setattr(type(enc), "_hidden", small_memory)
    with pytest.warns(UserWarning, match="out of GPU memory"):
        out = Engine(enc, cache_dir=None).embed(TEXTS)
    np.testing.assert_allclose(out, reference, atol=2e-6, rtol=0)
    assert len(attention_calls) == 4  # two halves of three texts, two layers each


@pytest.mark.slow  # over 2 s: CLI runs
def test_the_cli_option_reaches_the_loader_and_the_record(env, tiny_bert_dir, monkeypatch):
    from typer.testing import CliRunner

    import embench.models.as_encoder as as_encoder
    from embench.cli import app

    for command in (["run"], ["mteb", "run"], ["analyze"], ["audit"], ["compare"]):  # every command that encodes
        assert "--unpadded" in CliRunner().invoke(app, [*command, "--help"], terminal_width=200).output
    with pytest.warns(UserWarning, match="--unpadded .* no effect here: variable-length attention needs a CUDA GPU"):
        result = CliRunner().invoke(app, ["run", "-m", str(tiny_bert_dir), "-t", "STS12", "--unpadded", "--format", "json"])
    assert result.exit_code == 0, result.output
    record = embench.results(model=str(tiny_bert_dir.name))[0]
    assert record.provenance["unpadded"] is False  # this CPU ran padded batches, and the record says so
    seen = {}

    def capture(name, **options):
        seen.update(options)
        raise EmbenchError("captured")

    monkeypatch.setattr(as_encoder, "load_model", capture)  # where evaluate turns a model name into an encoder
    result = CliRunner().invoke(app, ["run", "-m", str(tiny_bert_dir), "-t", "STS12", "--unpadded"])
    assert "captured" in str(result.exception) and seen["unpadded"] is True


@pytest.mark.parametrize("mode", ["sum", "mask"])
@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_bellm_s_bidirectional_layers_open_each_text_of_the_row(tiny_llama_dir, attention_calls, mode):
    """BeLLM's sum (Eq. 5: the branch reruns the last layers without the causal mask) and mask modes: in a packed row
    each text's causal mask is opened, as the padded batch's mask is; K = 2 of 2 layers, so every layer differs."""
    for pooling in ("last_token", "mean"):
        padded, unpadded = _pair(tiny_llama_dir, pooling=pooling, bidirectional_last=2, bidirectional_mode=mode)
        causal = Engine(embench.load_model(tiny_llama_dir, device="cpu", pooling=pooling), cache_dir=None).embed(TEXTS)
        assert np.abs(padded - causal).max() > 1e-3  # the bidirectional layers change the vectors
        np.testing.assert_allclose(unpadded, padded, atol=1e-5, rtol=0)
    assert len(attention_calls) == (4 if mode == "sum" else 2) * 2  # sum: 2 causal layers + the branch's 2


def _bellm_module(tiny_llama_dir, data_root, tmp_path, **options):
    from embench.train import make_config
    from embench.train.methods import METHODS
    from embench.train.resolution import resolve

    cfg = resolve(make_config(method="bellm", model=str(tiny_llama_dir), lora_r=4, lora_dropout=0.0, max_length=32,
                              data_root=str(data_root), out=str(tmp_path / "run"), precision="fp32", progress=False,
                              **options))
    model = METHODS.get(cfg.method)(cfg).build("cpu")
    model.train()
    return model


def _vectors_and_grads(model, texts):
    model.zero_grad(set_to_none=True)
    z = model(texts)
    (z * torch.linspace(-1, 1, z.shape[1])).sum().backward()  # a gradient that weighs every row and unit
    return z.detach(), {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.slow  # LoRA Llama steps: about 3 s
@pytest.mark.parametrize("mode", ["sum", "mask"])
def test_a_training_pass_gives_the_padded_pass_s_vectors_and_gradients(tiny_llama_dir, data_root, tmp_path,
                                                                       attention_calls, mode):
    """The bellm step's module (LoRA Llama, BeLLM's bidirectional last layer, left padding, the last token) as one
    padded pass and as packed rows: with length buckets, and with gradient checkpointing, whose recomputed layers
    must attend variable-length again (the model keeps its attention implementation between forward and backward)."""
    texts = [t for t in TEXTS for _ in range(2)]
    model = _bellm_module(tiny_llama_dir, data_root, tmp_path, bidirectional_mode=mode)
    model.bucket_tokens = 0
    z, grads = _vectors_and_grads(model, texts)
    padded_tokens = model.padded_tokens
    model.unpadded = True  # what run_unpadded sets on a GPU in bf16/fp16
    use_varlen(model.encoder)
    for buckets, checkpointing in ((0, False), (60, False), (0, True)):
        model.bucket_tokens = buckets
        if checkpointing:
            model.encoder.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        calls = len(attention_calls)
        zu, grads_u = _vectors_and_grads(model, texts)
        assert len(attention_calls) > calls  # the rows attended variable-length (and again when recomputed)
        torch.testing.assert_close(zu, z, rtol=1e-5, atol=1e-5)
        assert grads_u.keys() == grads.keys() and grads
        for name, g in grads.items():
            torch.testing.assert_close(grads_u[name], g, rtol=1e-4, atol=max(1e-6, 1e-4 * float(g.abs().max())),
                                       msg=lambda m, name=name: f"{name}: {m}")
    real = sum(len(ids) for ids in model._ids(texts)["input_ids"])
    assert model.padded_tokens - padded_tokens == 3 * real  # a packed row computes its real tokens only


@pytest.mark.slow  # two LoRA Llama modules built: about 1.5 s
def test_the_trainer_option_says_why_it_stays_padded_here(tiny_llama_dir, data_root, tmp_path):
    model = _bellm_module(tiny_llama_dir, data_root, tmp_path)
    with pytest.warns(UserWarning, match="--set unpadded=1 has no effect here: variable-length attention needs a CUDA GPU"):
        assert model.run_unpadded("cpu", torch.bfloat16) is False
    assert model.unpadded is False and model.encoder.config._attn_implementation == "sdpa"
    billm = _bellm_module(tiny_llama_dir, data_root, tmp_path, bidirectional_mode="billm")
    with pytest.warns(UserWarning, match="--bidirectional-mode billm attends padding"):
        assert billm.run_unpadded("cuda", torch.bfloat16) is False


@pytest.mark.slow  # a two-step LoRA Llama run: about 2 s
def test_a_run_asked_to_go_unpadded_trains_and_records_what_it_used(tiny_llama_dir, data_root, tmp_path, monkeypatch,
                                                                     attention_calls):
    """``--set unpadded=1`` through the trainer: on this CPU the warning and padded passes, recorded as such; with the
    device check passed (as on a GPU), the steps run as packed rows and the record says so."""
    import json

    import embench.models.unpadded_batch as unpadded_batch
    from embench.train import Trainer, make_config

    triplets = tmp_path / "nli.csv"
    triplets.write_text("sent0,sent1,hard_neg\n" + "a man plays a guitar,a person makes music,nobody plays at all\n" * 8)

    def run(out):
        cfg = make_config(recipe="bellm", model=str(tiny_llama_dir), data=[str(triplets)], data_root=str(data_root),
                          out=str(tmp_path / out), max_steps=2, batch_size=4, max_length=24, lora_r=4, load_kbit=0,
                          warmup_steps=0, progress=False, unpadded=True, precision="fp32", bidirectional_mode="sum")
        trainer = Trainer(cfg)
        trainer.best_dir = trainer.fit().best_dir
        return trainer, json.loads((tmp_path / out / "train_config.json").read_text())

    with pytest.warns(UserWarning, match="--set unpadded=1 has no effect here"):
        trainer, record = run("cpu")
    assert record["unpadded"] is True and record["unpadded_used"] is False and trainer.model.unpadded is False
    monkeypatch.setattr(unpadded_batch, "why_not_flash", lambda device, dtype: None)  # as on a GPU in bf16
    trainer, record = run("gpu-like")
    assert record["unpadded_used"] is True and trainer.model.unpadded is True
    assert trainer.model.padded_tokens == trainer.model.tokens  # the steps computed real tokens only
    # the adapter it saved, loaded for encoding with --unpadded (LoRA layers over the base: the same vectors)
    calls = len(attention_calls)
    padded, unpadded = _pair(trainer.best_dir)
    assert embench.load_model(trainer.best_dir, device="cpu").settings.extra["adapter"] and len(attention_calls) > calls
    np.testing.assert_allclose(unpadded, padded, atol=1e-5, rtol=0)


def test_under_the_varlen_implementation_a_padded_batch_is_transformers_sdpa(tiny_bert_dir, tiny_llama_dir, attention_calls):
    """A model that runs unpadded keeps the implementation for good (so recomputed layers stay variable-length); a
    padded batch given to it (an evaluation during training, an analysis) still gets SDPA with SDPA's masks."""
    for folder in (tiny_bert_dir, tiny_llama_dir):
        enc = embench.load_model(folder, device="cpu")
        inputs = enc.tokenize(TEXTS)
        sdpa = enc.forward_hidden(inputs, True).hidden_states
        use_varlen(enc.model)
        assert enc.model.config._attn_implementation == varlen.NAME
        ours = enc.forward_hidden(inputs, True).hidden_states
        assert attention_calls == []  # no packed row: transformers' SDPA ran
        for a, b in zip(sdpa, ours, strict=True):
            assert torch.equal(a, b)


def test_the_gpu_check_of_the_flash_kernel_flags_a_wrong_kernel(benchmark_script, monkeypatch, capsys):
    """``benchmarks/varlen_check.py`` (run first in a GPU session) with the kernel stood in for on the CPU: the
    reference passes within bf16 rounding, a kernel that ignores causality or the texts' boundaries fails."""
    check = benchmark_script("varlen_check")
    monkeypatch.setattr(varlen, "why_not_flash", lambda device, dtype: None)
    monkeypatch.setattr(varlen, "FLASH_PARAMS", frozenset({"window_size", "enable_gqa"}))

    def right(q, k, v, cu, cu_k, max_q, max_k, window_size=(-1, -1), enable_gqa=False, **_):
        return varlen.reference_attention(q, k, v, cu, window_size == (-1, 0), None)

    def one_text(q, k, v, cu, cu_k, max_q, max_k, window_size=(-1, -1), enable_gqa=False, **_):
        whole = torch.tensor([0, q.shape[0]], dtype=cu.dtype)  # the row as one text: the boundaries ignored
        return varlen.reference_attention(q, k, v, whole, window_size == (-1, 0), None)

    monkeypatch.setattr(varlen, "FLASH_KERNEL", right)
    assert check.main(["--device", "cpu"]) == 0
    assert capsys.readouterr().out.count("ok  ") == 8
    monkeypatch.setattr(varlen, "FLASH_KERNEL", one_text)
    assert check.main(["--device", "cpu"]) == 1
    assert "BAD " in capsys.readouterr().out


def test_where_the_kernel_has_no_gqa_switch_the_check_probes_unrepeated_heads_without_counting_them(
        benchmark_script, monkeypatch, capsys):
    check = benchmark_script("varlen_check")
    monkeypatch.setattr(varlen, "why_not_flash", lambda device, dtype: None)
    monkeypatch.setattr(varlen, "FLASH_PARAMS", frozenset({"window_size"}))  # torch 2.11's form

    def takes_groups(q, k, v, cu, cu_k, max_q, max_k, window_size=(-1, -1), **_):
        return varlen.reference_attention(q, k, v, cu, window_size == (-1, 0), None)

    def refuses_groups(q, k, v, cu, cu_k, max_q, max_k, window_size=(-1, -1), **_):
        if k.shape[1] != q.shape[1]:
            raise RuntimeError("number of heads in key/value must equal the query's")
        return takes_groups(q, k, v, cu, cu_k, max_q, max_k, window_size)

    monkeypatch.setattr(varlen, "FLASH_KERNEL", takes_groups)
    assert check.main(["--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert out.count("ok  ") == 8 and out.count("probe: grouped-query heads unrepeated, ok") == 2
    monkeypatch.setattr(varlen, "FLASH_KERNEL", refuses_groups)
    assert check.main(["--device", "cpu"]) == 0  # the 8 counted cases repeat the heads and pass
    assert capsys.readouterr().out.count("unrepeated, refused: RuntimeError: number of heads") == 2


@pytest.fixture
def flash_kernel_on_the_cpu():
    """torch's ``aten::_flash_attention_forward`` (CUDA only) given a CPU kernel for the test: the reference, with the
    arguments torch's ``varlen_attn`` wrapper handed it."""
    seen = {}

    def forward(q, k, v, cu_q, cu_k, max_q, max_k, dropout_p, is_causal, return_debug_mask, *, scale=None,
                window_size_left=None, window_size_right=None, **_):
        seen.update(is_causal=is_causal, max_q=max_q, kv_heads=k.shape[1], dropout_p=dropout_p)
        out = varlen.reference_attention(q, k, v, cu_q, is_causal, scale)
        return out, torch.zeros(q.shape[1], q.shape[0]), torch.zeros(2, dtype=torch.uint64), torch.empty(0), torch.empty(0)

    library = torch.library.Library("aten", "IMPL")
    library.impl("_flash_attention_forward", forward, "CPU")
    yield seen
    library._destroy()


@pytest.mark.parametrize("causal", [False, True])
def test_this_torch_s_varlen_wrapper_gets_causality_and_grouped_heads_through(flash_kernel_on_the_cpu, causal):
    """Our call of this torch's own ``varlen_attn`` (its keywords as this release names them), down to the kernel."""
    torch.manual_seed(0)
    q, kv = torch.randn(8, 4, 16), torch.randn(8, 2, 16)
    cu = torch.tensor([0, 3, 8], dtype=torch.int32)
    out = varlen._flash(q, kv, kv, cu, 5, causal, None)
    assert flash_kernel_on_the_cpu == {"is_causal": causal, "max_q": 5, "kv_heads": 2 if "enable_gqa" in varlen.FLASH_PARAMS
                                       else 4, "dropout_p": 0.0}
    torch.testing.assert_close(out, varlen.reference_attention(q, kv, kv, cu, causal, None), atol=1e-6, rtol=0)
