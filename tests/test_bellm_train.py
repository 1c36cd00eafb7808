"""``embench train --method bellm``: Eq. 6 and AnglE's objectives by hand, LoRA, the adapter saved and loaded back."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import embench
from embench.core.errors import EmbenchError
from embench.train.distributed import DistInfo
from embench.train.methods.base import Batch, Outputs
from embench.train.methods.bellm import BeLLM, BeLLMOptions, pair_ranking_loss


def _method(**opts):
    from embench.train import make_config, resolve

    return BeLLM(resolve(make_config(method="bellm", **opts)))


def test_eq6_with_in_batch_and_hard_negatives_by_hand():
    h = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    pos = torch.tensor([[1.0, 1.0], [0.0, 2.0]])
    neg = torch.tensor([[-1.0, 0.0], [1.0, 0.0]])
    tau = 0.5
    cos = lambda a, b: float(F.cosine_similarity(a, b, dim=0))  # noqa: E731
    want = 0.0
    for i in range(2):  # Eq. 6: -log e^{cos(h_i, h_i+)/tau} / sum_j (e^{cos(h_i, h_j+)/tau} + e^{cos(h_i, h_j-)/tau})
        den = sum(math.exp(cos(h[i], pos[j]) / tau) + math.exp(cos(h[i], neg[j]) / tau) for j in range(2))
        want += -math.log(math.exp(cos(h[i], pos[i]) / tau) / den)
    method = _method(temperature=tau)
    batch = Batch({"anchor": ["a", "b"], "positive": ["c", "d"], "hard": ["e", "f"]})
    loss, logs = method.objective(Outputs({"anchor": h, "positive": pos, "hard": neg}), batch, DistInfo())
    assert float(loss) == pytest.approx(want / 2, rel=1e-6)  # the mean over the batch
    assert set(logs) == {"ibn_loss"}


def test_loss_groups_are_each_a_loss_of_their_own_examples_averaged_by_hand():
    """loss_group g: each anchor's softmax over the positives and hard negatives of its own g examples only, as the
    authors' AnglE computes each GPU's loss over its own batch; the mean over the step = the mean of the groups'."""
    torch.manual_seed(0)
    h, pos, neg = (torch.randn(6, 4) for _ in range(3))
    tau = 0.1

    def eq6(a, p, q):  # by hand, one group
        cos = lambda x, y: float(F.cosine_similarity(x, y, dim=0))  # noqa: E731
        out = 0.0
        for i in range(len(a)):
            den = sum(math.exp(cos(a[i], p[j]) / tau) + math.exp(cos(a[i], q[j]) / tau) for j in range(len(a)))
            out += -math.log(math.exp(cos(a[i], p[i]) / tau) / den)
        return out / len(a)

    batch = Batch({"anchor": list("abcdef"), "positive": list("ghijkl"), "hard": list("mnopqr")})
    outputs = Outputs({"anchor": h, "positive": pos, "hard": neg})
    grouped, _ = _method(temperature=tau, loss_group=3, batch_size=6).objective(outputs, batch, DistInfo())
    assert float(grouped) == pytest.approx((eq6(h[:3], pos[:3], neg[:3]) + eq6(h[3:], pos[3:], neg[3:])) / 2, rel=1e-5)
    whole, _ = _method(temperature=tau).objective(outputs, batch, DistInfo())
    assert float(whole) == pytest.approx(eq6(h, pos, neg), rel=1e-5)
    assert float(_method(temperature=tau, loss_group=6, batch_size=6).objective(outputs, batch, DistInfo())[0]) == pytest.approx(float(whole))
    with pytest.raises(EmbenchError, match="loss_group"):
        _method(loss_group=-1)
    with pytest.raises(EmbenchError, match="loss_group=3 must divide --batch-size 8"):
        _method(loss_group=3, batch_size=8)


@pytest.mark.slow  # importing sentence-transformers takes seconds
def test_cosent_and_angle_objectives_by_hand():
    a = torch.tensor([[1.0, 0.0, 0.0, 1.0]])
    n = torch.tensor([[1.0, 0.0, 1.0, 1.0]])  # the negative is closer than the positive: a loss far from 0
    p = torch.tensor([[0.0, 1.0, 1.0, 0.0]])
    # CoSENT: log(1 + e^{20 (cos(a, n) - cos(a, p))}): the pair labelled 0 should score below the pair labelled 1
    cos_n, cos_p = 2 / (math.sqrt(2) * math.sqrt(3)), 0.0
    assert float(pair_ranking_loss(a, p, n, "cosine")) == pytest.approx(math.log1p(math.exp(20 * (cos_n - cos_p))), rel=1e-5)

    def angle_score(u, v):  # AnglE's angle similarity (sentence-transformers' form): |cos + sin| of the unit vectors,
        u, v = u / u.norm(), v / v.norm()  # halves (first, last) paired as the real and imaginary parts
        cos = float((u * v).sum())
        sin = float((u[2:] * v[:2] - u[:2] * v[2:]).sum())
        return abs(cos + sin)

    want = math.log1p(math.exp(20 * (angle_score(a[0], n[0]) - angle_score(a[0], p[0]))))
    assert float(pair_ranking_loss(a, p, n, "angle")) == pytest.approx(want, rel=1e-5)


@pytest.mark.slow
def test_loss_weights_add_the_objectives():
    h, pos, neg = torch.randn(3, 8), torch.randn(3, 8), torch.randn(3, 8)
    out = Outputs({"anchor": h, "positive": pos, "hard": neg})
    batch = Batch({"anchor": ["x"] * 3, "positive": ["y"] * 3, "hard": ["z"] * 3})
    ibn = _method().objective(out, batch, DistInfo())[0]
    both, logs = _method(cosine_weight=0.5, angle_weight=2.0).objective(out, batch, DistInfo())
    assert all(isinstance(v, torch.Tensor) and v.dim() == 0 for v in logs.values())  # read with the step's loss
    assert float(both) == pytest.approx(float(ibn) + 0.5 * float(logs["cosine_loss"]) + 2.0 * float(logs["angle_loss"]),
                                        rel=1e-6)
    with pytest.raises(EmbenchError, match="not all 0"):
        BeLLMOptions(ibn_weight=0.0)


def test_the_recipe_says_where_each_value_comes_from():
    from embench.train import make_config, resolve
    from embench.train.recipes import RECIPES

    cfg = resolve(make_config(recipe="bellm", model="m"))
    # the authors' run (README: lr 5e-4; train.py: 100 warm-up steps, "for sentence {text}"), not the paper's 2e-4
    assert (cfg.lora_r, cfg.lora_alpha, cfg.lora_dropout, cfg.lr, cfg.warmup_steps) == (32, 32.0, 0.1, 5e-4, 100)
    assert cfg.prompt == 'The representative word for sentence {text} is:"' and cfg.method_options.bidirectional_last == 1
    # the README's run: BiLLM_START_INDEX=31 through the billm package, --load_kbit 4
    assert (cfg.method_options.bidirectional_mode, cfg.load_kbit) == ("billm", 4)
    assert cfg.precision == "fp32"  # their --fp16 1 turns fp16 off (AnglE.fit keeps it only when None): fp32
    paper = resolve(make_config(method="bellm", model="m", prompt="bellm"))
    assert paper.prompt == 'The representative word for {text} is:"'
    assert (paper.method_options.bidirectional_mode, paper.load_kbit) == ("sum", 0)  # the method: Eq. 5, unquantised
    assert paper.precision == "auto"
    cites = RECIPES.get("bellm").cites
    assert "from the paper" in cites and "README" in cites
    assert all(w in cites for w in ("BiLLM_START_INDEX=31", "sum-code", "angle_emb/bellm/modeling_llama.py", "bellm-eval",
                                    "--precision fp16-mixed"))


def test_4bit_qlora_is_an_option_that_needs_lora_bitsandbytes_and_a_cuda_gpu_or_the_cpu(monkeypatch, tiny_llama_dir):
    """The authors' --load_kbit 4 (4AI/BeLLM model.py: bitsandbytes NF4, double quantisation, float32 compute).
    bitsandbytes is not a dependency: another device or a missing package is a clear error before any weight is read."""
    import sys
    import types

    from embench.train import make_config, resolve
    from embench.train.backbone import load_backbone
    from embench.train.kbit import kbit_load_kwargs

    with pytest.raises(EmbenchError, match="load_kbit=3.*choose 4"):
        resolve(make_config(method="bellm", model="m", load_kbit=3))
    assert resolve(make_config(recipe="bellm", model="m", load_kbit=0)).load_kbit == 0  # the recipe's 4, turned off
    with pytest.raises(EmbenchError, match="load_kbit=4 quantises the base weights.*--lora-r"):
        resolve(make_config(method="bellm", model="m", load_kbit=4, lora_r=0))
    cfg = resolve(make_config(recipe="bellm", model=str(tiny_llama_dir), lora_r=4))
    with pytest.raises(EmbenchError, match=r"runs on a CUDA GPU or the CPU; this run is on mps\. .*--set load_kbit=0"):
        load_backbone(cfg, "mps")
    monkeypatch.setitem(sys.modules, "bitsandbytes", None)  # not installed
    with pytest.raises(EmbenchError, match="needs the bitsandbytes package"):
        kbit_load_kwargs(4, "cuda:0")
    monkeypatch.setitem(sys.modules, "bitsandbytes", types.ModuleType("bitsandbytes"))
    kwargs = kbit_load_kwargs(4, "cuda:1")
    q = kwargs["quantization_config"]
    assert kwargs["device_map"] == {"": 1} and q.load_in_4bit and not q.load_in_8bit
    assert (q.bnb_4bit_quant_type, q.bnb_4bit_use_double_quant, q.bnb_4bit_compute_dtype) == ("nf4", True, torch.float32)
    assert kbit_load_kwargs(4, "cpu")["device_map"] == {"": "cpu"}
    assert kbit_load_kwargs(0, "cpu") == {}


@pytest.mark.slow
def test_the_recipe_s_qlora_trains_4bit_base_weights_on_the_cpu_and_saves_an_adapter_that_loads(tiny_llama_dir, data_root,
                                                                                                tmp_path):
    """--recipe bellm's QLoRA (load_kbit 4) under fp16 autocast with a loss scale (--precision fp16-mixed, the named
    option) on the CPU with bitsandbytes (a dev dependency): the base's linear layers are NF4 under the adapters and
    stay as they were read; only the adapters train."""
    from bitsandbytes.nn import Linear4bit

    from embench.train import Trainer, make_config

    triplets = tmp_path / "nli.csv"
    triplets.write_text("sent0,sent1,hard_neg\n" + "a man plays a guitar,a person makes music,nobody plays\n" * 4
                        + "two dogs run in snow,animals are outside,the dogs sleep inside\n" * 4)
    cfg = make_config(recipe="bellm", model=str(tiny_llama_dir), data=[str(triplets)], data_root=str(data_root),
                      out=str(tmp_path / "run"), max_steps=8, batch_size=4, max_length=24, lora_r=4, warmup_steps=0,
                      lr=1e-2, eval_steps=0, log_steps=1, progress=False, precision="fp16-mixed")
    trainer = Trainer(cfg)
    trainer.setup()
    assert trainer.cfg.load_kbit == 4
    quantised = {n: m for n, m in trainer.model.encoder.named_modules() if isinstance(m, Linear4bit)}
    assert quantised and all(m.weight.quant_state.quant_type == "nf4" for m in quantised.values())
    assert not any(p.requires_grad for n, p in trainer.model.encoder.named_parameters() if "lora_" not in n)
    packed = {n: m.weight.detach().clone() for n, m in quantised.items()}
    adapters = {n: p.detach().clone() for n, p in trainer.model.encoder.named_parameters() if "lora_B" in n}
    result = trainer.fit()
    losses = [h["loss"] for h in result.history if "loss" in h]
    assert len(losses) == 8 and all(np.isfinite(losses))
    assert all(torch.equal(m.weight, packed[n]) for n, m in quantised.items())  # the 4-bit base is not trained
    moved = [n for n, p in trainer.model.encoder.named_parameters() if n in adapters and not torch.equal(p, adapters[n])]
    # every adapter's B (zero at the start) trained, once fp16's dynamic loss scale came down from 65,536 (the first
    # steps overflow and are skipped, as in Hugging Face's Trainer: 8,192 after three)
    assert len(moved) == len(adapters) and trainer.scaler.get_scale() < 65536
    meta = json.loads((result.best_dir / "embench_adapter.json").read_text())
    assert meta["config"]["load_kbit"] == 4 and (result.best_dir / "adapter_model.safetensors").is_file()
    texts = ["a man plays a guitar", "two dogs run in snow"]
    tuned = embench.load_model(result.best_dir).encode_batch(texts)  # the adapter over the base read unquantised
    base = embench.load_model(tiny_llama_dir, bidirectional_last=1, bidirectional_mode="billm", prompt=meta["prompt"])
    assert np.isfinite(tuned).all() and not np.allclose(tuned, base.encode_batch(texts), atol=1e-4)


@pytest.mark.slow
def test_lora_training_saves_an_adapter_that_loads_back_bidirectional(tiny_llama_dir, tiny_bert_dir, data_root, tmp_path):
    from embench.train import make_config, train

    triplets = tmp_path / "nli.csv"
    rows = [("A man plays a guitar.", "A person makes music.", "Nobody is playing."),
            ("Two dogs run in snow.", "Animals are outside.", "The dogs sleep inside."),
            ("A woman cooks dinner.", "Someone is cooking.", "The kitchen is empty."),
            ("Kids play football.", "Children play a sport.", "The kids are asleep.")] * 4
    triplets.write_text("sent0,sent1,hard_neg\n" + "\n".join(",".join(r) for r in rows) + "\n")
    common = dict(model=str(tiny_llama_dir), data=[str(triplets)], data_root=str(data_root), max_steps=3, batch_size=8,
                  max_length=32, lora_r=4, progress=False, gradient_checkpointing=True, grad_accumulation=2,
                  bidirectional_last=2, angle_weight=1.0)
    r = train(make_config(method="bellm", out=str(tmp_path / "run"), **common))
    best = r.best_dir
    meta = json.loads((best / "embench_adapter.json").read_text())
    assert (best / "adapter_config.json").is_file() and not (best / "model.safetensors").exists()
    assert meta["bidirectional_last"] == 2 and meta["base_model"] == str(tiny_llama_dir)
    assert meta["bidirectional_mode"] == "sum"  # the method's default: Eq. 5
    card = (best / "README.md").read_text()  # was peft's template: "[More Information Needed]" 39 times
    assert "More Information Needed" not in card and "is a LoRA adapter (peft's `adapter_config.json`" in card
    assert f"on `{tiny_llama_dir.name}`" in card and "runs every layer causally" in card  # the base by its folder's name
    texts = ["A man plays a guitar.", "Two dogs run through the snow."]
    by_folder = embench.load_model(best)  # the folder names its base, prompt and bidirectional setting
    by_base = embench.load_model(tiny_llama_dir, adapter=best)
    assert by_folder.settings.extra["bidirectional_last"] == 2 and by_folder.settings.prompt == meta["prompt"]
    assert by_folder.settings.extra["bidirectional_mode"] == by_base.settings.extra["bidirectional_mode"] == "sum"
    np.testing.assert_allclose(by_folder.encode_batch(texts), by_base.encode_batch(texts), atol=1e-6)
    with pytest.raises(EmbenchError, match="is itself an adapter folder"):  # run -m BASE -m best --adapter best
        embench.load_model(best, adapter=best)  # was: transformers' "Unrecognized model ... model_type"
    # an adapter saved before the modes (no mode in its file) was trained as one stack: it loads as mask
    (best / "embench_adapter.json").write_text(json.dumps({k: v for k, v in meta.items() if k != "bidirectional_mode"}))
    assert embench.load_model(best).settings.extra["bidirectional_mode"] == "mask"
    assert embench.load_model(best, bidirectional_mode="billm").settings.extra["bidirectional_mode"] == "billm"
    # one saved before the model's fingerprint covered its tokenizer names the weights' alone: still its base
    from embench.models.fingerprints import weights_fingerprint

    assert meta["base_fingerprint"] == embench.load_model(tiny_llama_dir).fingerprint != weights_fingerprint(tiny_llama_dir)
    (best / "embench_adapter.json").write_text(json.dumps({**meta, "base_fingerprint": weights_fingerprint(tiny_llama_dir)}))
    assert embench.load_model(best).fingerprint == by_folder.fingerprint
    base = embench.load_model(tiny_llama_dir, bidirectional_last=2, prompt="bellm")
    assert not np.allclose(base.encode_batch(texts), by_base.encode_batch(texts), atol=1e-4)  # the adapter changed it
    assert by_base.cache_key() != base.cache_key()
    with pytest.raises(EmbenchError, match=r"adapter .* was trained on .*tiny-llama-bellm.*fingerprint"):
        embench.load_model(tiny_bert_dir, adapter=best)
    with pytest.raises(EmbenchError, match="is an encoder"):
        train(make_config(method="bellm", out=str(tmp_path / "bert"), **{**common, "model": str(tiny_bert_dir)}))


@pytest.mark.slow
def test_the_recipe_trains_in_the_billm_mode_and_its_adapter_loads_back_in_it(tiny_llama_dir, data_root, tmp_path):
    from embench.models.bidirectional import bidirectional_setting
    from embench.train import Trainer, make_config

    triplets = tmp_path / "nli.csv"
    triplets.write_text("sent0,sent1,hard_neg\n" + "a man plays a guitar,a person makes music,nobody plays\n" * 8)
    cfg = make_config(recipe="bellm", model=str(tiny_llama_dir), data=[str(triplets)], data_root=str(data_root),
                      out=str(tmp_path / "run"), max_steps=2, batch_size=4, max_length=24, lora_r=4, load_kbit=0,
                      warmup_steps=0, progress=False)
    trainer = Trainer(cfg)
    result = trainer.fit()
    assert bidirectional_setting(trainer.model.encoder).mode == "billm"  # trained as the authors' README trains
    loaded = embench.load_model(result.best_dir)
    assert (loaded.settings.extra["bidirectional_last"], loaded.settings.extra["bidirectional_mode"]) == (1, "billm")
    assert bidirectional_setting(loaded.model).mode == "billm"


@pytest.mark.slow
def test_training_on_a_gguf_file_reads_its_dequantised_weights_from_the_cache(tmp_path, monkeypatch, tiny_llama_dir):
    """The trainer's load of a .gguf file goes through embench's GGUF cache as the encoder's does: a second
    load reads the cached safetensors (the "file" here is not even a readable GGUF), with the run's config
    overrides applied on top."""
    import shutil

    from embench.models.fingerprints import fingerprint_files, stat_files
    from embench.train import make_config, resolve
    from embench.train.backbone import load_backbone

    monkeypatch.setenv("EMBENCH_GGUF_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF stands here for a file dequantised before")
    shutil.copytree(tiny_llama_dir, tmp_path / "cache" / fingerprint_files(stat_files(gguf)))  # what the first load left
    cfg = resolve(make_config(method="bellm", model=str(gguf), dropout=0.25))
    backbone = load_backbone(cfg, "cpu")
    from transformers import AutoModel

    reference = AutoModel.from_pretrained(tiny_llama_dir)
    assert backbone.encoder.config.attention_dropout == 0.25  # the override, on the cached config
    trained = {n.split("base_model.model.")[-1].replace(".base_layer", ""): p for n, p in backbone.encoder.state_dict().items()}
    for name, value in reference.state_dict().items():
        assert torch.equal(trained[name], value), name
    gguf.write_bytes(b"GGUF edited: another file, so no cache entry")  # a file never dequantised is read as GGUF
    with pytest.raises(EmbenchError, match="model.gguf"):
        load_backbone(resolve(make_config(method="bellm", model=str(gguf))), "cpu")


@pytest.mark.slow  # a process of its own (imports of torch, transformers and peft)
def test_a_lora_run_from_the_command_line_prints_no_third_party_noise(tiny_llama_dir, data_root, tmp_path):
    """peft reads transformers' deprecated ``is_gradient_checkpointing`` (a FutureWarning) and, with bitsandbytes
    installed, bitsandbytes warns of an optional CPU kernel package: neither concerns a user's LoRA run."""
    import os
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "embench.cli", "train", "--recipe", "bellm", "--model", str(tiny_llama_dir),
                          "--data", str(data_root), "--max-steps", "1", "--batch-size", "4", "--set", "max_examples=8",
                          "--set", "load_kbit=0", "--precision", "fp32", "-q", "--out", str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert res.returncode == 0, res.stderr[-3000:]
    assert (tmp_path / "run/best").is_dir()
    for noise in ("is_gradient_checkpointing", "kernels-community", "FutureWarning"):
        assert noise not in res.stderr, res.stderr


@pytest.mark.slow
def test_qlora_with_checkpointing_recomputes_without_torch_s_reentrant_form(tiny_llama_dir, data_root, tmp_path):
    """peft's preparation of a 4-bit model turned checkpointing to torch's reentrant form (a warning on every step,
    and no DDP); the trainer keeps it non-reentrant."""
    import warnings

    from embench.train import Trainer, make_config

    triplets = tmp_path / "nli.csv"
    triplets.write_text("sent0,sent1,hard_neg\n" + "a man plays a guitar,a person makes music,nobody plays\n" * 4)
    trainer = Trainer(make_config(recipe="bellm", model=str(tiny_llama_dir), data=[str(triplets)], data_root=str(data_root),
                                  out=str(tmp_path / "run"), max_steps=1, batch_size=4, max_length=24, lora_r=4,
                                  gradient_checkpointing=True, eval_steps=0, progress=False))
    trainer.setup()
    assert trainer.cfg.load_kbit == 4
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        trainer.step(0)
    assert not [w for w in seen if "use_reentrant" in str(w.message)], [str(w.message) for w in seen]
    funcs = [m._gradient_checkpointing_func for m in trainer.model.modules() if hasattr(m, "_gradient_checkpointing_func")]
    assert funcs and all(f.keywords.get("use_reentrant") is False for f in funcs)
