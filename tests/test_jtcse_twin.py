"""JTCSE's twin towers: the cross-attention layer against Eqs. 8-10, the equivalence with two SimCSE
towers, export as one model ([CLS]_I + [CLS]_II), and the bad inputs of issue 16."""

from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F

from embench.core.errors import EmbenchError
from embench.train import METHODS, make_config, resolve
from embench.train.cross_attention import cael, cross_layer_indices, cross_streams
from embench.train.distributed import DistInfo

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["A man plays a guitar.", "Two dogs run in a field of grass.", "The cat sleeps.", "Stocks fell sharply today."]


def _tiny(folder, tok_dir, seed, hidden=32, pooler=True):
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(tok_dir)
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=hidden, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128)
    BertModel(cfg, add_pooling_layer=pooler).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tower2_dir(tmp_path_factory, tiny_bert_dir):
    return _tiny(tmp_path_factory.mktemp("tower2"), tiny_bert_dir, seed=1)


def _bert_layers(folder):
    from transformers import BertModel

    return BertModel.from_pretrained(folder).eval()


def test_cross_layers_are_every_kth_layer_eq7():
    assert cross_layer_indices(12, 6) == [1, 3, 5, 7, 9, 11]  # k = 2: layers 2, 4, ..., 12 (1-based)
    assert cross_layer_indices(12, 1) == [11]
    assert cross_layer_indices(12, 12) == list(range(12))
    assert cross_layer_indices(6, 0) == []
    with pytest.raises(EmbenchError, match=r"divide the model's 6 layers.*\[1, 2, 3, 6\]"):
        cross_layer_indices(6, 4)


def test_cael_output_equals_a_direct_computation_of_eqs_8_to_10(tiny_bert_dir, tower2_dir):
    m1, m2 = _bert_layers(tiny_bert_dir), _bert_layers(tower2_dir)
    l1, l2 = m1.encoder.layer[0], m2.encoder.layer[0]
    g = torch.Generator().manual_seed(3)
    x1, x2 = torch.randn(2, 5, 32, generator=g), torch.randn(2, 5, 32, generator=g)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    bias = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min

    def direct(la, lb, xa, xb):
        H, dh = 2, 16
        out = torch.zeros_like(xa)
        for b in range(2):
            heads = []
            for h in range(H):
                s = slice(h * dh, (h + 1) * dh)
                q = xa[b] @ la.attention.self.query.weight[s].T + la.attention.self.query.bias[s]
                k = xa[b] @ la.attention.self.key.weight[s].T + la.attention.self.key.bias[s]
                v_other = xb[b] @ lb.attention.self.value.weight[s].T + lb.attention.self.value.bias[s]  # V_II(HD_II)
                scores = q @ k.T / math.sqrt(dh)  # Eq. 8
                scores = scores.masked_fill(mask[b][None, :] == 0, float("-inf"))
                heads.append(torch.softmax(scores, dim=-1) @ v_other)  # Eq. 10
            cact = torch.cat(heads, dim=-1)
            # the rest of layer j of tower A: output projection, residual, LayerNorm, FFN, residual, LayerNorm
            att = F.layer_norm(cact @ la.attention.output.dense.weight.T + la.attention.output.dense.bias + xa[b], (32,),
                               la.attention.output.LayerNorm.weight, la.attention.output.LayerNorm.bias,
                               la.attention.output.LayerNorm.eps)
            ffn = F.gelu(att @ la.intermediate.dense.weight.T + la.intermediate.dense.bias)
            out[b] = F.layer_norm(ffn @ la.output.dense.weight.T + la.output.dense.bias + att, (32,),
                                  la.output.LayerNorm.weight, la.output.LayerNorm.bias, la.output.LayerNorm.eps)
        return out

    with torch.no_grad():
        c1, c2 = cael(l1, l2, x1, x2, bias, cross=True)
        assert torch.allclose(c1, direct(l1, l2, x1, x2), atol=1e-5)
        assert torch.allclose(c2, direct(l2, l1, x2, x1), atol=1e-5)
        # the towers' own context tensors (Eq. 9) differ from the cross ones
        s1, _ = cael(l1, l2, x1, x2, bias, cross=False)
        assert not torch.allclose(s1, c1, atol=1e-3)


def test_a_stream_of_self_attention_layers_reproduces_the_model(tiny_bert_dir):
    """The cross stream's layer code is BERT's layer: without cross-attention it gives the model's output."""
    from transformers import AutoTokenizer

    m = _bert_layers(tiny_bert_dir)
    enc = AutoTokenizer.from_pretrained(tiny_bert_dir)(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = m(**enc, output_hidden_states=True)
        a, _ = cross_streams(m.encoder.layer, m.encoder.layer, out.hidden_states, out.hidden_states,
                             enc["attention_mask"], [0])
        # [0]: the stream starts at layer 1 as a CAEL of a tower with itself = ordinary self-attention
        assert torch.allclose(a, out.last_hidden_state, atol=1e-5)


def _jtcse(tiny_bert_dir, tower2_dir, **options):
    cfg = resolve(make_config(method="jtcse", model=str(tiny_bert_dir), tower2=str(tower2_dir), max_length=16,
                              device="cpu", **options))
    return METHODS.get("jtcse")(cfg)


@pytest.mark.slow
def test_without_cross_attention_and_extra_losses_one_step_equals_two_simcse_towers(tiny_bert_dir, tower2_dir):
    jt = _jtcse(tiny_bert_dir, tower2_dir, cross_layers=0, icnce_weight=0.0, ictm_weight=0.0)
    twin = jt.build("cpu").train()
    refs = []
    for folder in (tiny_bert_dir, tower2_dir):
        cfg = resolve(make_config(method="unsup-simcse", model=str(folder), mlp="none", pooling="cls_before_pooler",
                                  max_length=16, device="cpu"))
        sim = METHODS.get("unsup-simcse")(cfg)
        refs.append((sim, sim.build("cpu").train()))
    import random

    batch = jt.batch(TEXTS, list(range(4)), random.Random(0))
    params = [p for p in twin.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-3)
    torch.manual_seed(7)  # the dropout masks: tower I's forward, then tower II's
    loss, _ = jt.loss(twin, batch, DistInfo())
    loss.backward()
    opt.step()

    torch.manual_seed(7)
    total = 0.0
    for sim, model in refs:  # two independent unsup-SimCSE steps, one after the other
        p = [q for q in model.parameters() if q.requires_grad]
        o = torch.optim.AdamW(p, lr=1e-3)
        l_one, _ = sim.loss(model, sim.batch(TEXTS, list(range(4)), random.Random(0)), DistInfo())
        l_one.backward()
        o.step()
        total += float(l_one.detach())
    assert float(loss.detach()) == pytest.approx(total, rel=1e-6)
    for tower, (_, model) in zip(twin.towers, refs, strict=True):
        for (name, a), b in zip(tower.named_parameters(), model.encoder.parameters(), strict=True):
            assert torch.allclose(a, b, atol=1e-6), name


@pytest.mark.slow
def test_full_loss_has_every_term_and_trains_cross_attention(tiny_bert_dir, tower2_dir):
    import random

    jt = _jtcse(tiny_bert_dir, tower2_dir, cross_layers=2)
    twin = jt.build("cpu").train()
    torch.manual_seed(0)
    loss, logs = jt.loss(twin, jt.batch(TEXTS, list(range(4)), random.Random(1)), DistInfo())
    assert set(logs) == {"l_nce", "l_icnce", "l_ictm"}
    assert float(loss) == pytest.approx(float(logs["l_nce"] + logs["l_icnce"] + logs["l_ictm"]), rel=1e-5)
    loss.backward()
    pooler = twin.towers[0].pooler.dense.weight
    assert pooler.grad is not None and pooler.grad.abs().sum() > 0  # L_ICTM reaches the pooler head


@pytest.mark.slow
def test_exported_twin_loads_as_one_model_whose_vector_is_the_sum_of_cls(tiny_bert_dir, tower2_dir, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    from embench import load_model

    jt = _jtcse(tiny_bert_dir, tower2_dir, cross_layers=1)
    twin = jt.build("cpu")
    folder = jt.export(twin, tmp_path / "best", {"step": 0})
    enc = load_model(folder, device="cpu")
    got = enc.encode_batch(TEXTS)
    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    batch = tok(TEXTS, padding=True, truncation=True, max_length=16, return_tensors="pt")
    with torch.no_grad():
        want = sum(AutoModel.from_pretrained(d).eval()(**batch).last_hidden_state[:, 0] for d in (tiny_bert_dir, tower2_dir))
    assert got.shape == (4, 32)
    assert torch.allclose(torch.from_numpy(got), want, atol=1e-5)


@pytest.mark.slow
def test_towers_of_different_shapes_are_refused_before_training(tiny_bert_dir, tmp_path):
    wide = _tiny(tmp_path / "wide", tiny_bert_dir, seed=2, hidden=48)
    jt = _jtcse(tiny_bert_dir, wide)
    with pytest.raises(EmbenchError, match=r"cannot be twin towers: hidden_size 32 vs 48.*ensemble:A\+B"):
        jt.build("cpu")


@pytest.mark.slow
def test_modulus_loss_without_a_pooler_head_says_so_and_offers_cls(tiny_bert_dir, tmp_path):
    bare = _tiny(tmp_path / "bare", tiny_bert_dir, seed=2, pooler=False)
    with pytest.raises(EmbenchError, match=r"no pooler head.*modulus_on=cls"):
        _jtcse(tiny_bert_dir, bare).build("cpu")
    _jtcse(tiny_bert_dir, bare, modulus_on="cls").build("cpu")  # the [CLS] variant trains


@pytest.mark.slow
def test_layernorm_removal_removes_the_last_layers_layernorms(tiny_bert_dir, tower2_dir):
    twin = _jtcse(tiny_bert_dir, tower2_dir, remove_layernorm=1, modulus_on="cls").build("cpu")
    for tower in twin.towers:
        first, last = tower.encoder.layer
        assert isinstance(first.output.LayerNorm, torch.nn.LayerNorm)
        assert isinstance(last.output.LayerNorm, torch.nn.Identity)
        assert isinstance(last.attention.output.LayerNorm, torch.nn.Identity)


def test_jtcse_recipes_show_the_authors_scripts_numbers():
    import yaml
    from typer.testing import CliRunner

    from embench.cli import app

    bert = yaml.safe_load(CliRunner().invoke(app, ["train", "--recipe", "jtcse-bert", "--show"]).output)
    assert (bert["method"], bert["lr"], bert["batch_size"], bert["epochs"], bert["max_length"]) == ("jtcse", 1.3e-6, 64, 1, 64)
    assert (bert["eval_steps"], bert["eval_tasks"], bert["method_options"]["cross_layers"]) == (100, ["STSBenchmark-dev"], 6)
    roberta = yaml.safe_load(CliRunner().invoke(app, ["train", "-r", "jtcse-roberta", "--show", "--tower2", "B"]).output)
    assert (roberta["lr"], roberta["batch_size"], roberta["method_options"]["tower2"]) == (1e-6, 256, "B")
    wrong = CliRunner().invoke(app, ["train", "--method", "unsup-simcse", "--tower2", "B", "--show"])
    assert isinstance(wrong.exception, EmbenchError) and "tower2" in str(wrong.exception)


@pytest.mark.slow
def test_cli_trains_a_twin_that_embench_run_scores(tiny_bert_dir, tower2_dir, data_root, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from embench.cli import app

    monkeypatch.setenv("EMBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("EMBENCH_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS * 4) + "\n")
    out = tmp_path / "twin"
    res = CliRunner().invoke(app, ["train", "--method", "jtcse", "--model", str(tiny_bert_dir), "--tower2", str(tower2_dir),
                                   "--train-data", str(corpus), "--data", str(data_root), "--out", str(out), "--max-steps", "2",
                                   "--batch-size", "4", "--max-length", "16", "--cross-layers", "1", "--eval-steps", "0",
                                   "--set", "tmc_form=code", "--quiet"])
    assert res.exit_code == 0, res.output
    metrics = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert {"l_nce", "l_icnce", "l_ictm"} <= set(metrics[-1])
    run = CliRunner().invoke(app, ["run", "--model", str(out / "best"), "-t", "SICKRelatedness", "--device", "cpu"])
    assert run.exit_code == 0, run.output
    assert "SICK" in run.output


def test_jtcse_recipes_run_the_scripts_forms_and_need_a_second_tower(tiny_bert_dir, data_root, tmp_path):
    """Issue 31, item 2: the recipes follow train_jtcse_bert.py (code forms, constant lr, no clipping, AdamW's
    default weight decay) and ask for --tower2; the method's own defaults keep the paper's forms."""
    from embench.train import make_config, resolve, train

    cfg = resolve(make_config(recipe="jtcse-bert", model=str(tiny_bert_dir), tower2=str(tiny_bert_dir)))
    o = cfg.method_options
    assert (o.nce_form, o.icnce_form, o.tmc_form) == ("code", "code", "code")
    assert (cfg.lr_schedule, cfg.grad_clip, cfg.weight_decay, cfg.warmup_ratio) == ("constant", 0.0, 0.01, 0.0)
    paper = resolve(make_config(method="jtcse", model=str(tiny_bert_dir))).method_options
    assert (paper.nce_form, paper.icnce_form, paper.tmc_form) == ("paper", "paper", "paper")
    with pytest.raises(EmbenchError, match="recipe='jtcse-bert' needs tower2: the paper's two towers are different"):
        train(make_config(recipe="jtcse-bert", model=str(tiny_bert_dir), data_root=str(data_root), out=str(tmp_path),
                          max_steps=1, progress=False))
    assert not any(tmp_path.iterdir())  # stopped before anything was loaded or written



def _tower_export(tiny_bert_dir, tower2_dir, tmp_path, **options):
    jt = _jtcse(tiny_bert_dir, tower2_dir, cross_layers=0, modulus_on="cls", **options)
    return jt.export(jt.build("cpu"), tmp_path / "best", {"step": 3, "STSBenchmark-dev": 0.4697,
                                                          "selected_on": "STSBenchmark-dev", "scores": {"STSBenchmark-dev": 0.4697}})


@pytest.mark.slow
def test_tower_cards_say_the_scores_are_the_twins(tiny_bert_dir, tower2_dir, tmp_path):
    folder = _tower_export(tiny_bert_dir, tower2_dir, tmp_path)
    for sub in ("tower-1", "tower-2"):
        card = (folder / sub / "README.md").read_text()
        # the twin's score was shown as the tower's own, "the number embench run gives" for the tower
        assert "These are the twin's scores" in card and "not this tower's own" in card
        assert json.loads((folder / sub / "embench_training.json").read_text())["twin_of"] == ".."
        assert (folder / sub / "modules.json").exists()  # with its LayerNorms, a tower alone is a sentence-transformers folder


@pytest.mark.slow
def test_a_tower_without_layernorms_is_no_sentence_transformers_folder_and_its_card_says_why(tiny_bert_dir, tower2_dir,
                                                                                             tmp_path):
    folder = _tower_export(tiny_bert_dir, tower2_dir, tmp_path, remove_layernorm=1)
    for sub in ("tower-1", "tower-2"):
        card = (folder / sub / "README.md").read_text()
        # it was a sentence-transformers folder that, loaded alone, puts the removed LayerNorms back (max diff 0.009)
        assert not (folder / sub / "modules.json").exists()
        assert "without their LayerNorms" in card and "loads the twin" in card
