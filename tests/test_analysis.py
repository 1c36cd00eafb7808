"""Analyses: every number equals a direct numpy computation of its paper's definition; the CLI writes
figures and tables; bad input gives clear errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from embench.analysis import attention as att
from embench.analysis import geometry as geo
from embench.analysis.cosine_density import cosine_by_bin, gold_bins
from embench.analysis.knn import fit_transform, knn_accuracy, load_labelled, split_indices
from embench.analysis.token_dependency import sentence_dependency
from embench.core.errors import EmbenchError, MissingDataError
from embench.models import load_model


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(0)


def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# -- geometry (SimCSE §5, App. F) -------------------------------------------------------------
def test_alignment_is_mean_squared_distance_of_normalised_positive_pairs(rng):
    a, b = rng.normal(size=(50, 8)), rng.normal(size=(50, 8))
    expected = np.mean([np.sum((x - y) ** 2) for x, y in zip(_unit(a), _unit(b), strict=True)])
    assert geo.alignment(a, b) == pytest.approx(expected, rel=1e-12)


def test_uniformity_in_blocks_equals_log_mean_gaussian_potential_over_distinct_pairs(rng, monkeypatch):
    x = rng.normal(size=(37, 6)) + 0.5
    u = _unit(x)
    pots = [math.exp(-2 * np.sum((u[i] - u[j]) ** 2)) for i in range(len(u)) for j in range(i + 1, len(u))]
    expected = math.log(np.mean(pots))
    for block in (5, 16, 1000):  # blocks that cut the matrix unevenly give the same number
        assert geo.uniformity(x, t=2, block_size=block) == pytest.approx(expected, rel=1e-10)
    monkeypatch.setattr(geo, "MAX_BLOCK_ELEMENTS", 50)  # the memory cap forces one row per block here
    assert geo.uniformity(x, t=2) == pytest.approx(expected, rel=1e-10)


def test_alignment_standard_error_is_the_pairs_std_over_sqrt_n(rng):
    a, b = rng.normal(size=(30, 5)), rng.normal(size=(30, 5))
    terms = [np.sum((x - y) ** 2) for x, y in zip(_unit(a), _unit(b), strict=True)]
    value, se = geo.alignment_with_se(a, b)
    assert value == pytest.approx(np.mean(terms), rel=1e-12)
    assert se == pytest.approx(math.sqrt(sum((t - np.mean(terms)) ** 2 for t in terms) / 29 / 30), rel=1e-10)


def test_uniformity_standard_error_is_the_delete_one_sentence_jackknife(rng):
    x = rng.normal(size=(23, 4)) + 0.3
    loo = np.array([geo.uniformity(np.delete(x, i, axis=0)) for i in range(len(x))])  # by brute force
    expected = math.sqrt((len(x) - 1) / len(x) * np.sum((loo - loo.mean()) ** 2))
    for block in (4, 7, 1000):
        value, se = geo.uniformity_with_se(x, t=2, block_size=block)
        assert value == pytest.approx(geo.uniformity(x), rel=1e-12) and se == pytest.approx(expected, rel=1e-8)
    assert math.isnan(geo.uniformity_with_se(x[:2])[1])  # no spread from two sentences


def test_spectrum_effective_rank_and_anisotropy_match_numpy(rng):
    x = rng.normal(size=(40, 10)) @ np.diag(np.linspace(3, 0.1, 10)) + 1.0
    s = np.linalg.svd(x, compute_uv=False)
    np.testing.assert_allclose(geo.singular_spectrum(x), s, rtol=1e-10)
    np.testing.assert_allclose(geo.singular_spectrum(x, center=True), np.linalg.svd(x - x.mean(0), compute_uv=False), rtol=1e-10)
    p = s / s.sum()
    assert geo.effective_rank(s) == pytest.approx(math.exp(-(p * np.log(p)).sum()))
    assert geo.effective_rank(np.ones(7)) == pytest.approx(7.0)
    u = _unit(x)
    cos = u @ u.T
    off_diagonal = cos[~np.eye(len(x), dtype=bool)]
    assert geo.anisotropy(x) == pytest.approx(off_diagonal.mean(), rel=1e-10)
    assert geo.anisotropy(x, n_pairs=20000, seed=1) == pytest.approx(off_diagonal.mean(), abs=0.02)


# -- cosine density (SimCSE App. G) -----------------------------------------------------------
def test_cosine_bins_group_pairs_by_gold_score_with_the_last_bin_closed(rng):
    gold = np.array([0.0, 0.99, 1.0, 2.5, 3.999, 4.0, 5.0, 4.6])
    np.testing.assert_array_equal(gold_bins(gold), [0, 0, 1, 2, 3, 4, 4, 4])
    a, b = rng.normal(size=(8, 5)), rng.normal(size=(8, 5))
    frame = cosine_by_bin(a, b, gold).set_index("bin")
    cos = np.sum(_unit(a) * _unit(b), axis=1)
    assert frame.loc["4-5", "n"] == 3
    assert frame.loc["4-5", "mean"] == pytest.approx(cos[[5, 6, 7]].mean())
    assert frame.loc["0-1", "std"] == pytest.approx(cos[[0, 1]].std())
    with pytest.raises(EmbenchError, match="edges"):
        gold_bins(gold, edges=(0, 3, 2))


# -- kNN (cropping paper §3.3.1) --------------------------------------------------------------
def _direct_knn(xtr, ytr, xte, k, metric):
    if metric == "cosine":
        d = 1 - _unit(xte) @ _unit(xtr).T
    else:
        d = np.sqrt(((xte[:, None, :] - xtr[None, :, :]) ** 2).sum(-1))
    classes = np.unique(ytr)
    pred = []
    for row in d:
        votes = ytr[np.argsort(row, kind="stable")[:k]]
        counts = np.array([(votes == c).sum() for c in classes])
        pred.append(classes[np.argmax(counts)])  # ties: the smallest label, as scikit-learn
    return np.array(pred)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("transform", ["raw", "centred", "whitened"])
@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_knn_accuracy_equals_direct_majority_vote_with_binomial_stderr(rng, metric, transform):
    y = np.repeat(np.arange(4), 60)
    x = rng.normal(size=(240, 6)) + y[:, None] * np.array([0.6, 0, 0.3, 0, 0, 0]) + 2.0
    r = knn_accuracy(x, y, k=10, metric=metric, transform=transform, seed=3, block_size=7)
    tr, te = split_indices(y, 0.1, 3)
    xtr, xte = x[tr].astype(np.float32), x[te].astype(np.float32)
    if transform != "raw":
        mu = xtr.mean(0)
        xtr, xte = xtr - mu, xte - mu
        if transform == "whitened":
            vals, vecs = np.linalg.eigh(np.cov(xtr, rowvar=False))
            w = vecs / np.sqrt(vals)
            xtr, xte = xtr @ w, xte @ w
    acc = (_direct_knn(xtr, y[tr], xte, 10, metric) == y[te]).mean()
    assert (r["n_train"], r["n_test"]) == (216, 24)
    assert r["accuracy"] == pytest.approx(acc)
    assert r["stderr"] == pytest.approx(math.sqrt(acc * (1 - acc) / 24))


def test_knn_split_is_nine_to_one_and_stratified():
    y = np.repeat(["a", "b", "c"], [100, 50, 30])
    tr, te = split_indices(y, 0.1, 42)
    assert len(te) == 18 and len(set(tr) & set(te)) == 0
    assert sorted(np.unique(y[te], return_counts=True)[1]) == [3, 5, 10]


def test_whitening_is_fitted_on_the_training_split_only(rng):
    train, test = rng.normal(size=(300, 5)) @ rng.normal(size=(5, 5)), rng.normal(size=(30, 5)) + 10
    wtr, wte = fit_transform(train, test, "whitened")
    np.testing.assert_allclose(np.cov(wtr, rowvar=False), np.eye(5), atol=1e-4)
    assert abs(wte.mean()) > 1  # the shifted test set is not re-centred by its own mean


def test_knn_rejects_bad_options_clearly(rng):
    x, y = rng.normal(size=(40, 3)), np.repeat([0, 1], 20)
    with pytest.raises(EmbenchError, match="metric"):
        knn_accuracy(x, y, metric="manhattan")
    with pytest.raises(EmbenchError, match="transform"):
        knn_accuracy(x, y, transform="pca")
    with pytest.raises(EmbenchError, match="stratif"):
        knn_accuracy(x, np.arange(40), k=3)  # one example per class cannot be split by class


# -- labelled sets of the data root -----------------------------------------------------------
def test_labelled_sets_read_from_the_data_root(data_root):
    trec = load_labelled("trec", data_root)  # train_5500.label is latin-1, as SentEval reads it
    assert len(trec) == 5952 and sorted(set(trec.labels)) == ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
    small = load_labelled("banking77", data_root, splits=["test"], limit=500, seed=1)
    assert len(small) == 500 and small.texts == load_labelled("banking77", data_root, splits=["test"], limit=500, seed=1).texts


def test_missing_labelled_data_names_every_missing_file(tmp_path):
    (tmp_path / "tasks" / "emotion").mkdir(parents=True)
    (tmp_path / "tasks" / "emotion" / "train.jsonl").write_text('{"text": "hi", "label": "joy"}\n')
    with pytest.raises(MissingDataError) as e:
        load_labelled("emotion", tmp_path)
    msg = str(e.value)
    assert "validation.jsonl.gz" in msg and "test.jsonl.gz" in msg and "train.jsonl" not in msg


# -- attention (JTCSE §VI.B, Eq. 6) -----------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_encoder(tiny_bert_dir):
    return load_model(tiny_bert_dir, pooling="mean", device="cpu")


def _manual_attention(encoder, text):
    """softmax(QK^T/sqrt d) and its context tensor per layer, from the weights, in numpy."""
    enc = encoder.tokenize([text])
    model = encoder.model
    model.set_attn_implementation("eager")
    with torch.inference_mode():
        hs = model(**enc, output_hidden_states=True).hidden_states
    cfg = model.config
    h, d = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads
    atts, ctxs = [], []
    for layer in range(cfg.num_hidden_layers):
        sa = model.encoder.layer[layer].attention.self
        x = hs[layer][0].numpy().astype(np.float64)

        def proj(lin, x=x):
            return (x @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()).reshape(len(x), h, d).transpose(1, 0, 2)

        q, k, v = proj(sa.query), proj(sa.key), proj(sa.value)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        atts.append(a)
        ctxs.append(a @ v)  # (H, T, d)
    return enc, atts, ctxs


@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_attention_shares_and_cls_energy_weight_match_a_numpy_attention(tiny_encoder):
    text = "The cat sat on the mat."
    enc, atts, ctxs = _manual_attention(tiny_encoder, text)
    _, out = att.attention_outputs(tiny_encoder, [text])
    n = int(enc["attention_mask"].sum())
    tokens = tiny_encoder.tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    punct = att.final_punctuation(tokens, enc["input_ids"][0].tolist(), set(tiny_encoder.tokenizer.all_special_ids))
    assert tokens[punct] == "." and punct == n - 2
    _, contexts = att.context_tensors(tiny_encoder, [text])
    for layer, (a, c) in enumerate(zip(atts, ctxs, strict=True)):
        np.testing.assert_allclose(out.attentions[layer][0].numpy(), a, atol=1e-5)
        shares = att.sink_shares(out.attentions[layer][0].numpy(), n, punct)
        mean_a = a.mean(0)  # heads averaged, then over every query token
        assert shares["cls"] == pytest.approx(mean_a[:, 0].mean(), abs=1e-6)
        assert shares["sep"] == pytest.approx(mean_a[:, n - 1].mean(), abs=1e-6)
        assert shares["punct"] == pytest.approx(mean_a[:, punct].mean(), abs=1e-6)
        np.testing.assert_allclose(contexts[layer][0].numpy(), c, atol=1e-5)
        concat = c.transpose(1, 0, 2).reshape(n, -1)
        e = np.linalg.norm(concat[0]) / np.sqrt((concat[1:] ** 2).sum())
        assert att.cls_energy_weight(concat, n) == pytest.approx(e, rel=1e-6)
        assert att.cls_energy_weight(concat, n, exclude={n - 1}) == pytest.approx(
            np.linalg.norm(concat[0]) / np.linalg.norm(concat[1 : n - 1]), rel=1e-6)


@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_attention_without_eager_implementation_is_a_clear_error(tiny_bert_dir):
    encoder = load_model(tiny_bert_dir, pooling="mean", device="cpu")
    model = encoder.model
    model.config._attn_implementation = "sdpa"

    def refuse(*_a, **_k):
        raise ValueError("this model has no eager attention")

    model.set_attn_implementation = refuse
    with pytest.raises(EmbenchError, match="eager"):
        att.attention_outputs(encoder, ["a sentence"])


def test_a_model_that_returns_no_attention_weights_is_a_clear_error(tiny_bert_dir):
    encoder = load_model(tiny_bert_dir, pooling="mean", device="cpu")
    encoder.model.set_attn_implementation("sdpa")  # SDPA returns no weights
    encoder.model.set_attn_implementation = lambda *_a, **_k: None  # and pretend the switch "worked"
    with pytest.raises(EmbenchError, match="attn_implementation='eager'"):
        att.attention_outputs(encoder, ["a sentence"])


def test_sdpa_models_are_switched_to_eager(tiny_bert_dir):
    encoder = load_model(tiny_bert_dir, pooling="mean", device="cpu")
    encoder.model.set_attn_implementation("sdpa")
    _, out = att.attention_outputs(encoder, ["a sentence"])
    assert len(out.attentions) == 2 and encoder.model.config._attn_implementation == "eager"


# -- token dependency (BeLLM §2) --------------------------------------------------------------
def test_token_dependency_is_the_mean_spearman_of_the_pivot_with_the_other_tokens(rng):
    states = rng.normal(size=(7, 30))
    keep = [1, 2, 3, 4, 5]  # [CLS]=0 is the pivot, position 6 ([SEP]) left out
    expected = np.mean([spearmanr(states[0], states[j])[0] for j in keep])
    assert sentence_dependency(states, 0, [0, *keep]) == pytest.approx(expected, rel=1e-10)
    assert math.isnan(sentence_dependency(states, 0, [0]))


# -- the CLI, end to end on the tiny model ----------------------------------------------------
@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("analysis-cache")


@pytest.mark.parametrize(
    "name, extra, png, csv",
    [
        pytest.param("spectrum", [], "spectrum", "spectrum_summary", marks=pytest.mark.slow),
        pytest.param("cosine-density", [], "cosine_density", "cosine_density", marks=pytest.mark.slow),
        pytest.param("knn", ["--dataset", "trec", "--limit", "400", "--metric", "euclidean", "--metric", "cosine"], "knn", "knn",
                     marks=pytest.mark.slow),
        pytest.param("cls-energy", ["--limit", "40"], "cls_energy", "cls_energy", marks=pytest.mark.slow),
        pytest.param("attention", ["--limit", "40"], "attention_maps", "attention_sinks", marks=pytest.mark.slow),
        pytest.param("layers", ["--dataset", "trec", "--limit", "300", "--layers", "0,2"], "layers", "layers", marks=pytest.mark.slow),
        pytest.param("token-dependency", ["--limit", "50"], "token_dependency", "token_dependency_summary",
                     marks=pytest.mark.slow),
        pytest.param("tsne", ["--dataset", "trec", "--limit", "300"], "tsne", "tsne_knn", marks=pytest.mark.slow),
    ],
)
def test_cli_writes_png_pdf_and_csv(tmp_path, tiny_bert_dir, data_root, shared_cache, name, extra, png, csv):
    import pandas as pd
    from typer.testing import CliRunner

    from embench.cli import app

    out = tmp_path / name
    args = ["analyze", name, "-m", str(tiny_bert_dir), "-m", str(tiny_bert_dir), "--label", "tiny A", "--label", "tiny B",
            "--pooling", "mean", "--out", str(out), "--data", str(data_root), "--cache-dir", str(shared_cache), "-q", *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert (out / f"{png}.png").stat().st_size > 1000 and (out / f"{png}.pdf").stat().st_size > 1000
    frame = pd.read_csv(out / f"{csv}.csv")
    assert set(frame["model"]) == {"tiny A", "tiny B"}
    if name == "knn":
        assert set(frame["metric"]) == {"euclidean", "cosine"} and (frame["n_test"] == 40).all()
    if name == "layers":
        assert list(frame["layer"]) == [0, 2, 0, 2]


@pytest.mark.slow
@pytest.mark.parametrize("batch", [["--set", "batch_size=4"], ["--batch-size", "4"], ["--batch-size", "8", "--set", "batch_size=4"]])
def test_the_batch_size_option_of_a_per_token_analysis_reaches_its_pass(tmp_path, tiny_bert_dir, data_root, shared_cache,
                                                                        monkeypatch, batch):
    """``analyze attention --set batch_size=4`` died with ``TypeError: got multiple values for keyword argument
    'batch_size'`` (the shared --batch-size takes the same keyword); the analysis' own option wins, and the shared
    flag alone is its batch size too."""
    from typer.testing import CliRunner

    from embench.analysis import token_pass
    from embench.cli import app

    seen, run = [], token_pass.token_pass
    monkeypatch.setattr(token_pass, "token_pass", lambda reqs, size: seen.append(size) or run(reqs, size))
    args = ["analyze", "token-dependency", "-m", str(tiny_bert_dir), "--limit", "10", "--out", str(tmp_path / "o"),
            "--data", str(data_root), "--cache-dir", str(shared_cache), "-q", *batch]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert seen == [4]


@pytest.mark.slow
def test_layers_scores_each_layer_on_mteb_tasks_with_the_block_average(tmp_path, tiny_bert_dir, data_root, shared_cache):
    import json

    from typer.testing import CliRunner

    from embench.cli import app

    out = tmp_path / "layers"
    tasks = "MTEB:STS16,MTEB:STSBenchmark,MTEB:TwentyNewsgroupsClustering"
    args = ["analyze", "layers", "-m", str(tiny_bert_dir), "--layers", "0,2", "--set", "dataset=", "--suite", tasks,
            "--out", str(out), "--data", str(data_root), "--cache-dir", str(shared_cache), "-q"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    import pandas as pd

    frame = pd.read_csv(out / "layers.csv")
    assert list(frame["layer"]) == [0, 2]
    records = [json.loads(p.read_text()) for p in (out / "results").rglob("*.json")]
    for layer, got in zip(frame["layer"], frame["tasks_average"], strict=True):
        mine = {r["task"]: r["main_score"] for r in records if r["encoder"]["layer"] == layer}
        assert len(mine) == 3
        sts = (mine["MTEB:STS16"] + mine["MTEB:STSBenchmark"]) / 2
        assert got == pytest.approx((sts + mine["MTEB:TwentyNewsgroupsClustering"]) / 2)  # type means, then their mean
    bad = CliRunner().invoke(app, [*args[:8], "MTEB:STS16,STS-BB", *args[9:]])
    assert bad.exit_code != 0 and "STS-BB" in bad.output


@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_alignment_uniformity_follows_a_folder_of_checkpoints(tmp_path, tiny_bert_dir, data_root, shared_cache):
    from embench.analysis import run

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for step in (1000, 500):
        (run_dir / f"checkpoint-{step}").symlink_to(tiny_bert_dir, target_is_directory=True)
    res = run("alignment-uniformity", [run_dir], tmp_path / "au", data=data_root, cache_dir=shared_cache, pooling="mean")
    frame = res.tables["alignment_uniformity"]
    assert list(frame["checkpoint"]) == ["checkpoint-500", "checkpoint-1000"]
    assert list(frame["step"]) == [500, 1000]  # the training step, not the place in the series
    assert (frame["n_positive_pairs"] > 0).all() and frame["uniformity"].lt(0).all()
    assert (frame["alignment_se"] > 0).all() and (frame["uniformity_se"] > 0).all()  # the plot's error bars
    assert (tmp_path / "au" / "alignment_uniformity.pdf").is_file()


def test_cli_analysis_on_missing_data_names_the_files(tmp_path, tiny_bert_dir):
    from typer.testing import CliRunner

    from embench.cli import app

    result = CliRunner().invoke(app, ["analyze", "knn", "-m", str(tiny_bert_dir), "--dataset", "agnews", "--out", str(tmp_path / "o"),
                                      "--data", str(tmp_path), "--no-cache"])
    assert isinstance(result.exception, MissingDataError)
    assert "tasks/agnews/test.jsonl.gz" in str(result.exception)


def test_unknown_analysis_and_option_are_named(tmp_path, tiny_bert_dir):
    from embench.analysis import run

    with pytest.raises(EmbenchError, match="spectrum"):
        run("spectrun", [tiny_bert_dir], tmp_path)
    with pytest.raises(EmbenchError, match="no option"):
        run("spectrum", [tiny_bert_dir], tmp_path, metric="cosine")


@pytest.mark.slow
def test_layers_says_a_knn_subset_too_small_to_stratify_before_encoding_and_takes_stratify(tiny_bert_dir, data_root, tmp_path):
    """``layers --limit 500`` failed after the pass over every layer, naming ``--set stratify=false``, which layers refused."""
    from typer.testing import CliRunner

    from embench.cli import app

    args = ["analyze", "layers", "-m", str(tiny_bert_dir), "--layers", "2", "--limit", "500", "--out", str(tmp_path / "l"),
            "--data", str(data_root), "--cache-dir", str(tmp_path / "cache"), "-q"]
    small = CliRunner().invoke(app, args)
    assert small.exit_code != 0 and "cannot make a stratified split" in str(small.exception) + small.output
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.npy"))  # nothing encoded
    unstratified = CliRunner().invoke(app, [*args, "--set", "stratify=false"])
    assert unstratified.exit_code == 0, unstratified.output + repr(unstratified.exception)
