"""MultiCSR stage 3: the false-negative mask of a frozen encoder in supervised SimCSE (Eq. 6-7), and the
authors' code variants, against hand computations."""

from __future__ import annotations

import math

import pytest
import torch

from embench.train import RECIPES, make_config, resolve
from embench.train.distributed import DistInfo
from embench.train.false_negatives import false_negative_mask, masked_share, softmax_bce
from embench.train.losses import info_nce
from embench.train.methods import METHODS
from embench.train.methods.base import Batch, Outputs

# guide cosines of 3 anchors to 3 positives and 3 hard negatives (rows: anchors)
POS = torch.tensor([[0.99, 0.95, 0.10],
                    [0.20, 0.30, 0.91],
                    [0.92, 0.89, 0.97]])
HARD = torch.tensor([[0.95, 0.50, 0.90],
                     [0.93, 0.96, 0.10],
                     [0.00, 0.99, 0.90]])


def test_mask_removes_exactly_the_pairs_at_or_above_sigma_but_never_the_own_positive_or_hard_negative():
    mask = false_negative_mask(POS, HARD, 0.9)
    expected = torch.tensor([
        # positives 0..2      hard negatives 0..2
        [False, True, False,  False, False, True],   # own positive (0.99) and own hard (0.95) kept
        [False, False, True,  True, False, False],   # own positive (0.30) low anyway; own hard 0.96 kept
        [True, False, False,  False, True, False],   # 0.89 < 0.9 kept; own hard 0.90 kept
    ])
    assert torch.equal(mask, expected)
    # the share is over the 2N(N-1) = 12 negatives of other examples
    assert float(masked_share(mask)) == pytest.approx(6 / 12)
    # the code's variant: '>' sigma, own hard negative unprotected
    code = false_negative_mask(POS, HARD, 0.9, protect_hard=False, strict=True)
    assert code[0, 3] and code[1, 4] and not code[2, 5]  # 0.95, 0.96 masked; 0.90 is not > 0.9
    assert not code[0, 0]  # the own positive, always kept


def test_mask_rows_follow_the_anchor_offset_under_distributed_training():
    """Process 1 of 2 holds anchors 3..5 of a global batch of 6: its own pairs are columns 3..5."""
    pos, hard = torch.full((3, 6), 0.95), torch.full((3, 6), 0.95)
    mask = false_negative_mask(pos, hard, 0.9, offset=3)
    for i in range(3):
        assert not mask[i, 3 + i] and not mask[i, 6 + 3 + i]
        assert mask[i, :3].all() and mask[i, 6:9].all()
    assert float(masked_share(mask, offset=3)) == 1.0


A = torch.tensor([[1.0, 0.2, 0.0], [0.1, 1.0, 0.3], [0.0, 0.4, 1.0]])
P = torch.tensor([[0.9, 0.3, 0.1], [0.2, 0.8, 0.1], [0.1, 0.3, 0.9]])
H = torch.tensor([[0.5, -0.2, 0.4], [0.3, 0.1, -0.6], [-0.4, 0.6, 0.2]])


def _cos(u, v):
    return float(torch.dot(u, v) / (u.norm() * v.norm()))


def _method(**options):
    cfg = resolve(make_config(method="sup-simcse", temperature=0.1, **options))
    method = METHODS.get("sup-simcse")(cfg)
    return method


def _with_guide(method, pos, hard):
    """The method with a guide whose cosines are the tables ``pos`` and ``hard`` (anchor i against candidate j)."""
    method.guide = object()
    o = method.options
    method.false_negatives = lambda batch, offset: false_negative_mask(
        pos, hard, o.sigma, offset, protect_hard=o.fn_protect_hard, strict=o.fn_mask_variant == "code")
    return method


def _objective(method):
    batch = Batch({"anchor": ["a"] * 3, "positive": ["p"] * 3, "hard": ["h"] * 3})
    return method.objective(Outputs({"anchor": A, "positive": P, "hard": H}), batch, DistInfo())


def test_sigma_one_masks_nothing_and_the_loss_is_plain_supervised_simcse():
    plain = float(_objective(_method())[0])
    assert plain == pytest.approx(float(info_nce(A, P, 0.1, H)), rel=1e-6)
    loss, logs = _objective(_with_guide(_method(false_negative_filter="x", sigma=1.0), POS, HARD))
    assert float(loss) == pytest.approx(plain, rel=1e-6)
    assert float(logs["fn_masked_share"]) == 0.0


def test_paper_mask_loss_equals_eq7_by_hand():
    loss, logs = _objective(_with_guide(_method(false_negative_filter="x", sigma=0.9), POS, HARD))
    mask = false_negative_mask(POS, HARD, 0.9)
    cands = [P[j] for j in range(3)] + [H[j] for j in range(3)]
    hand = 0.0
    for i in range(3):
        den = sum(math.exp(_cos(A[i], c) / 0.1) for j, c in enumerate(cands) if not mask[i, j])
        hand += -math.log(math.exp(_cos(A[i], P[i]) / 0.1) / den)
    assert float(loss) == pytest.approx(hand / 3, rel=1e-5)
    assert float(logs["fn_masked_share"]) == pytest.approx(6 / 12) and float(logs["fn_masked_pairs"]) == 6
    assert float(logs["fn_masked_share_so_far"]) == pytest.approx(6 / 12)
    assert float(loss) < float(_objective(_method())[0])  # fewer negatives, smaller loss


def test_code_variant_zeroes_masked_logits_and_takes_bce_on_the_softmax_by_hand():
    method = _with_guide(_method(false_negative_filter="x", sigma=0.9, fn_mask_variant="code", fn_loss="bce",
                                 fn_protect_hard=False), POS, HARD)
    loss, _ = _objective(method)
    mask = false_negative_mask(POS, HARD, 0.9, protect_hard=False, strict=True)
    cands = [P[j] for j in range(3)] + [H[j] for j in range(3)]
    total = 0.0
    for i in range(3):
        # the code: softmax(cos / tau * weights), weights 0 where masked (so the logit is 0, e^0 = 1)
        logits = [0.0 if mask[i, j] else _cos(A[i], c) / 0.1 for j, c in enumerate(cands)]
        z = sum(math.exp(v) for v in logits)
        for j, v in enumerate(logits):
            p = math.exp(v) / z
            total += -math.log(p) if j == i else -math.log(1 - p)
    assert float(loss) == pytest.approx(total / 18, rel=1e-5)
    # zeroing alone (InfoNCE kept): e^0 in the denominator, by hand
    zero = _with_guide(_method(false_negative_filter="x", sigma=0.9, fn_mask_variant="code"), POS, HARD)
    mask = false_negative_mask(POS, HARD, 0.9, strict=True)
    hand = 0.0
    for i in range(3):
        logits = [0.0 if mask[i, j] else _cos(A[i], c) / 0.1 for j, c in enumerate(cands)]
        hand += -(logits[i] - math.log(sum(math.exp(v) for v in logits)))
    assert float(_objective(zero)[0]) == pytest.approx(hand / 3, rel=1e-5)


def test_softmax_bce_reads_no_log_of_a_removed_candidate():
    logits = torch.tensor([[2.0, float("-inf"), 0.5]])
    got = float(softmax_bce(logits, torch.tensor([0])))
    p0, p2 = math.exp(2) / (math.exp(2) + math.exp(0.5)), math.exp(0.5) / (math.exp(2) + math.exp(0.5))
    assert got == pytest.approx((-math.log(p0) - 0.0 - math.log(1 - p2)) / 3, rel=1e-6)


def test_bad_options_are_named():
    from embench.core.errors import EmbenchError

    with pytest.raises(EmbenchError, match="--sigma"):
        resolve(make_config(method="sup-simcse", sigma=1.5))
    with pytest.raises(EmbenchError, match="--fn-mask-variant"):
        resolve(make_config(method="sup-simcse", fn_mask_variant="nope"))
    with pytest.raises(EmbenchError, match="--false-negative-filter"):
        _objective(_method(fn_loss="bce"))


def test_the_multicsr_recipes_say_where_each_value_comes_from():
    cfg = resolve(make_config(recipe="multicsr"))
    o = cfg.method_options
    assert (cfg.batch_size, o.temperature, o.sigma, o.fn_mask_variant, o.fn_loss, o.fn_protect_hard) == \
        (256, 0.05, 0.9, "paper", "infonce", True)
    # the README's example command (run.sh -t 25) and the code's guide (its raw [CLS], no MLP)
    assert (cfg.eval_steps, o.fn_guide_pooling) == (25, "cls_before_pooler")
    assert resolve(make_config(method="sup-simcse")).method_options.fn_guide_pooling is None  # the method: as it loads
    assert "-t 25" in RECIPES.get("multicsr").cites and "cl_forward" in RECIPES.get("multicsr").cites
    code_cfg = resolve(make_config(recipe="multicsr-code"))
    code = code_cfg.method_options
    assert (code.fn_mask_variant, code.fn_loss, code.fn_protect_hard) == ("code", "bce", False)
    # the README's example run: batch 128 on one GPU, sigma 0.95 (-p), the guide reading the input cut at 32 tokens
    assert (code_cfg.batch_size, code.sigma, code.fn_max_length) == (128, 0.95, 32)
    assert "batch 256" in RECIPES.get("multicsr").cites and "run.sh" in RECIPES.get("multicsr").cites


def test_the_guide_reads_the_raw_cls_state_as_the_authors_code_or_pools_as_it_loads(tiny_bert_dir, one_thread):
    """Circle-Ming/MultiCSR simcse/models.py: the frozen encoder's vector is its last layer's [CLS] state (the cls
    pooler, no MLP: cl_forward with is_mask=True). By hand through transformers; a plain BERT folder otherwise
    loads with SimCSE's 'cls' (the pooler head), which is another vector."""
    from transformers import AutoModel, AutoTokenizer

    from embench.train.false_negatives import Guide

    texts = ["a man plays a guitar", "two dogs run through deep snow in the park"]
    tok, bert = AutoTokenizer.from_pretrained(tiny_bert_dir), AutoModel.from_pretrained(tiny_bert_dir).eval()
    with torch.no_grad():
        enc = tok(texts, padding=True, return_tensors="pt")
        out = bert(**enc)
    raw = torch.nn.functional.normalize(out.last_hidden_state[:, 0], dim=-1)
    head = torch.nn.functional.normalize(out.pooler_output, dim=-1)
    torch.testing.assert_close(Guide(str(tiny_bert_dir), "cpu", pooling="cls_before_pooler").vectors(texts), raw,
                               atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(Guide(str(tiny_bert_dir), "cpu").vectors(texts), head, atol=1e-5, rtol=1e-5)


@pytest.mark.slow
def test_the_frozen_encoder_stays_frozen_in_eval_mode_and_out_of_the_checkpoint(tiny_bert_dir, data_root, tmp_path):
    from embench.train import Trainer

    csv = tmp_path / "t.csv"
    rows = ["sent0,sent1,hard_neg"] + [f"a man number {i} runs,a person {i} moves,nobody {i} is here" for i in range(8)]
    csv.write_text("\n".join(rows) + "\n")
    cfg = make_config(method="sup-simcse", model=str(tiny_bert_dir), data=[str(csv)], false_negative_filter=str(tiny_bert_dir),
                      sigma=0.5, batch_size=4, max_steps=2, eval_steps=0, out=str(tmp_path / "run"), progress=False,
                      device="cpu", max_length=16)
    trainer = Trainer(cfg)
    result = trainer.fit()
    guide = trainer.method.guide
    assert guide is not None and not guide.module.training
    assert all(not p.requires_grad and p.grad is None for p in guide.module.parameters())
    guide_ids = {id(p) for p in guide.module.parameters()}
    assert not guide_ids & {id(p) for p in trainer.model.parameters()}
    assert not guide_ids & {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    n_model = len(trainer.model.state_dict())
    saved = torch.load(tmp_path / "run" / "checkpoint-last" / "state.pt", weights_only=True)
    assert len(saved["model"]) == n_model  # the resume state is the trained module's alone
    from safetensors.torch import load_file

    weights = load_file(next((result.best_dir).glob("*.safetensors")))
    assert len(weights) == len(trainer.model.encoder.state_dict())
    logged = [r for r in result.history if "fn_masked_share" in r]
    assert logged and all(0.0 <= r["fn_masked_share"] <= 1.0 and r["fn_masked_pairs"] >= 0 for r in logged)
    assert 0.0 <= logged[-1]["fn_masked_share_so_far"] <= 1.0  # over every step, whatever --log-steps


def test_unprotected_hard_negatives_count_the_same_cells_as_the_share_by_hand():
    """fn_protect_hard: false (the multicsr-code recipe) masks an anchor's own hard negative too; fn_masked_pairs
    counted those cells while the shares left them out, so fn_masked_share_so_far reached 1.03 over a run."""
    method = _with_guide(_method(false_negative_filter="x", sigma=0.9, fn_mask_variant="code", fn_loss="bce",
                                 fn_protect_hard=False), POS, HARD)
    # by hand ('>' 0.9, own positive kept): anchor 0 masks positive 1 (0.95) and its own hard 0 (0.95); anchor 1
    # positive 2 (0.91), hard 0 (0.93) and its own hard 1 (0.96); anchor 2 positive 0 (0.92) and hard 1 (0.99):
    # 7 cells, 2 of them own hard negatives, so 5 of the 12 negatives of other examples
    mask = false_negative_mask(POS, HARD, 0.9, protect_hard=False, strict=True)
    assert int(mask.sum()) == 7 and bool(mask[0, 3]) and bool(mask[1, 4])
    for _ in range(2):  # the share over the run stays the steps' share
        _, logs = _objective(method)
        assert float(logs["fn_masked_pairs"]) == 5
        assert float(logs["fn_masked_share"]) == pytest.approx(5 / 12)
        assert float(logs["fn_masked_share_so_far"]) == pytest.approx(5 / 12)
