"""SentEval transfer tasks and the batched PyTorch logistic regression (issue 3)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from embench.core.errors import EmbenchError, MalformedDataError, MissingDataError
from embench.data.root import DataRoot
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.suites import SUITES
from embench.tasks import TASKS
from embench.tasks.senteval import validation as clf
from embench.tasks.senteval.classifier import (
    CONFIGS,
    PENALTIES,
    ClassifierConfig,
    Fit,
    train_fits,
    train_many,
)
from embench.tasks.senteval.transfer import pair_features


def _separable(n: int, d: int, noise: float, seed: int = 0, nclasses: int = 2):
    """Gaussian inputs, labels from a known direction with a fraction ``noise`` of them flipped."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d).astype(np.float32)
    w = rng.randn(d)
    y = (X @ w > 0).astype(np.int64)
    flip = rng.rand(n) < noise
    y[flip] = 1 - y[flip]
    return X, y, w


def senteval_reference_fit(X, y, Xdev, ydev, l2reg, cfg, seed=1111, nclasses=2):
    """SentEval's ``MLP(nhid=0).fit(X, y, validation_data=...)``, line for line, on CPU."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(X.shape[1], nclasses))
    loss_fn = torch.nn.CrossEntropyLoss()
    loss_fn.size_average = False  # what SentEval writes; ignored by PyTorch >= 1.0
    opt = (torch.optim.Adam if cfg.optim == "adam" else torch.optim.RMSprop)(model.parameters())
    opt.param_groups[0]["weight_decay"] = l2reg
    X, y, Xdev, ydev = map(torch.as_tensor, (X, y, Xdev, ydev))
    nepoch, best, stop, count = 0, -1, False, 0
    while not stop and nepoch <= cfg.max_epoch:
        for _ in range(cfg.epoch_size):
            perm = np.random.permutation(len(X))
            for i in range(0, len(X), cfg.batch_size):
                idx = torch.as_tensor(perm[i : i + cfg.batch_size])
                loss = loss_fn(model(X[idx]), y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
        nepoch += cfg.epoch_size
        with torch.no_grad():
            acc = (model(Xdev).argmax(1) == ydev).float().mean().item()
        if acc > best:
            best, best_model = acc, copy.deepcopy(model)
        else:
            if count >= cfg.tenacity:
                stop = True
            count += 1
    return best, nepoch, best_model


# -- the classifier --------------------------------------------------------------------------
@pytest.mark.parametrize(("config", "penalty"), [("default", 1e-2), ("prototyping", 1e-5)])
def test_classifier_reproduces_senteval_training_loop(config, penalty):
    cfg = CONFIGS[config]
    X, y, _ = _separable(400, 12, noise=0.15, seed=1)
    tr, dev = np.arange(300), np.arange(300, 400)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        best, nepoch, model = senteval_reference_fit(X[tr], y[tr], X[dev], y[dev], penalty, cfg)
    finally:
        torch.set_num_threads(threads)
    ours = train_fits(X, y, [Fit(train=tr, dev=dev, penalties=[penalty], evals={"all": np.arange(400)})], cfg, 2, device="cpu")[0][0]
    assert ours.dev_acc == pytest.approx(best, abs=1e-6)
    assert ours.epochs == nepoch
    with torch.no_grad():
        ref_pred = model(torch.as_tensor(X)).argmax(1).numpy()
    assert (ours.predictions["all"] == ref_pred).mean() >= 0.995


def test_classifier_reaches_the_accuracy_of_a_known_separating_direction():
    # Labels flipped with probability 0.1 around a known hyperplane: the best possible accuracy is 0.9.
    X, y, w = _separable(6000, 20, noise=0.1, seed=2)
    X_te = np.random.RandomState(3).randn(4000, 20).astype(np.float32)
    y_te = (X_te @ w > 0).astype(np.int64)  # noiseless test labels: the direction itself
    res = clf.train_dev_test(X[:5000], y[:5000], X[5000:], y[5000:], X_te, y_te, 2, CONFIGS["prototyping"], device="cpu")
    assert res["dev_acc"] == pytest.approx(0.9, abs=0.03)  # noisy dev labels: capped at ~90%
    assert res["test_acc"] >= 0.95  # the learnt direction is within ~9 degrees of the true one


@pytest.mark.slow
def test_batched_fits_equal_one_at_a_time_fits():
    X, y, _ = _separable(900, 16, noise=0.2, seed=4)
    fits = [
        Fit(train=np.arange(0, 500), dev=np.arange(500, 600), penalties=PENALTIES, evals={"t": np.arange(600, 900)}),
        Fit(train=np.arange(50, 530), dev=np.arange(530, 640), penalties=PENALTIES),  # fewer rows: sits out steps
        Fit(train=np.arange(0, 600), validation_split=0.05, penalties=[1e-3], evals={"t": np.arange(600, 900)}),
    ]
    for config in ("default", "prototyping"):
        batched = train_many(X, y, fits, CONFIGS[config], 2, seed=1111, device="cpu", batched=True)
        single = train_many(X, y, fits, CONFIGS[config], 2, seed=1111, device="cpu", batched=False)
        for rb, rs in zip(batched, single, strict=True):
            for b, s in zip(rb, rs, strict=True):
                assert (b.penalty, b.epochs) == (s.penalty, s.epochs)
                assert b.dev_acc == pytest.approx(s.dev_acc, abs=1e-9)
                assert b.evals == pytest.approx(s.evals, abs=1e-9)


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_nested_cv_chooses_the_penalty_a_direct_grid_search_chooses():
    from sklearn.model_selection import StratifiedKFold

    # Few examples in many dimensions, so the L2 penalty matters.
    X, y, _ = _separable(300, 60, noise=0.1, seed=5)
    cfg = ClassifierConfig("small", kfold=3, optim="rmsprop", batch_size=32, tenacity=2, epoch_size=1, max_epoch=30)
    res = clf.nested_cv(X, y, 2, cfg, device="cpu")
    outer = StratifiedKFold(3, shuffle=True, random_state=1111).split(X, y)
    for fold, (tr, _) in zip(res["folds"], outer, strict=True):
        inner = list(StratifiedKFold(3, shuffle=True, random_state=1111).split(X[tr], y[tr]))
        grid = []
        for p in PENALTIES:
            accs = [train_fits(X, y, [Fit(train=tr[a], dev=tr[b], penalties=[p])], cfg, 2, device="cpu")[0][0].dev_acc for a, b in inner]
            grid.append(round(100 * np.mean(accs), 2))
        assert fold["penalty"] == PENALTIES[int(np.argmax(grid))]
        assert fold["dev_acc"] == pytest.approx(max(grid) / 100)


@pytest.mark.slow
def test_pytorch_classifier_agrees_with_sklearn_on_a_fixed_split_of_subj(data_root, minilm_path):
    """Same penalty, same split: SentEval's early-stopped Adam vs scikit-learn's exact optimum.

    mean cross-entropy + (penalty / 2) |w|^2 is C * summed cross-entropy + |w|^2 / 2 with
    C = 1 / (penalty * n). (At 1e-5 the two part by about a point: scikit-learn then reaches an almost
    unregularised optimum, while early stopping keeps SentEval's classifier regularised.)
    """
    from sklearn.linear_model import LogisticRegression

    from embench.encoding.engine import Engine
    from embench.models.loader import load_model

    data, _ = TASKS.get("SUBJ").read(DataRoot(data_root))
    pick = np.random.RandomState(0).permutation(len(data["all"].y))[:3000]
    X = Engine(load_model(minilm_path), batch_size=64).embed([" ".join(data["all"].a[i]) for i in pick])
    y = data["all"].y[pick]
    tr, dev, te = np.arange(2000), np.arange(2000, 2300), np.arange(2300, 3000)
    penalties = (1e-4, 1e-3, 1e-2)
    ours = train_fits(X, y, [Fit(train=tr, dev=dev, penalties=penalties, evals={"test": te})], CONFIGS["default"], 2, device="cpu")[0]
    for p, res in zip(penalties, ours, strict=True):
        sk = LogisticRegression(C=1.0 / (p * len(tr)), max_iter=5000).fit(X[tr], y[tr])
        sk_acc = float((sk.predict(X[te]) == y[te]).mean())
        assert res.evals["test"] > 0.85
        assert abs(res.evals["test"] - sk_acc) <= 0.005, (p, res.evals["test"], sk_acc)


def test_degenerate_split_is_a_clear_error():
    X = np.random.RandomState(0).randn(100, 4).astype(np.float32)
    one_class = np.zeros(100, dtype=np.int64)
    with pytest.raises(EmbenchError, match="single class"):
        clf.nested_cv(X, one_class, 2, CONFIGS["prototyping"], device="cpu", what="MR")
    with pytest.raises(EmbenchError, match="single class"):
        clf.train_dev_test(X[:60], one_class[:60], X[60:80], one_class[60:80], X[80:], one_class[80:], 2, CONFIGS["prototyping"], device="cpu")
    rare = one_class.copy()
    rare[:3] = 1
    with pytest.raises(EmbenchError, match="at least 10 examples of every class"):
        clf.kfold_then_test(X[:80], rare[:80], X[80:], rare[80:], 2, CONFIGS["default"], device="cpu")
    # too few rows for a 5 % hold-out to hold any: the error names the task, not only "a fit"
    small = np.arange(20) % 2
    with pytest.raises(EmbenchError, match=r"^my-cls: a fit has no dev rows \(16 training rows, 5% of which are held out"):
        clf.nested_cv(X[:20], small, 2, CONFIGS["prototyping"], device="cpu", what="my-cls")


# -- the tasks -------------------------------------------------------------------------------
def test_tasks_and_suites_are_registered_as_papers_print_them():
    assert SUITES.get("transfer").tasks == ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
    senteval = SUITES.get("senteval").tasks
    assert senteval[:7] == ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness")
    assert senteval[7:] == SUITES.get("transfer").tasks
    assert [TASKS.get(t).display for t in SUITES.get("transfer").tasks] == ["MR", "CR", "SUBJ", "MPQA", "SST", "TREC", "MRPC"]
    assert {TASKS.get(t).kind for t in ("SST-5", "SICK-E", "SST")} == {"transfer"}


@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_readers_keep_senteval_counts_tokens_and_order(data_root):
    root = DataRoot(data_root)
    sizes = {n: {k: len(v.y) for k, v in TASKS.get(n).read(root)[0].items()} for n in ("MR", "TREC", "MRPC", "SICK-E")}
    assert sizes == {
        "MR": {"all": 10662}, "TREC": {"train": 5452, "test": 500},
        "MRPC": {"train": 4076, "test": 1725}, "SICK-E": {"train": 4500, "dev": 500, "test": 4927},
    }
    trec = TASKS.get("TREC").read(root)[0]["train"]
    keys = [(len(a), y) for a, y in zip(trec.a, trec.y, strict=True)]
    assert keys == sorted(keys)  # SentEval's sort: token count, then label
    assert all("  " not in t for t in trec.texts())  # tokens re-joined with one space
    mrpc = TASKS.get("MRPC").read(root)[0]["train"]
    assert mrpc.b is not None and len(mrpc.texts()) == 2 * 4076


def _write(path: Path, lines: list[str], encoding: str = "utf-8") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(("\n".join(lines) + "\n").encode(encoding))


def test_malformed_lines_name_file_and_line(tmp_path):
    root = DataRoot(tmp_path)
    base = tmp_path / "senteval" / "downstream"
    _write(base / "TREC" / "train_5500.label", ["DESC:manner How did it go ?", "WHAT:x Who is it ?"])
    _write(base / "TREC" / "TREC_10.label", ["NUM:date When ?"])
    with pytest.raises(MalformedDataError, match=r"train_5500\.label:2: unknown label 'WHAT'"):
        TASKS.get("TREC").prepare(root, EvalProtocol())
    _write(base / "MRPC" / "msr_paraphrase_train.txt", ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String", "1\t1\t2\tonly one sentence"])
    _write(base / "MRPC" / "msr_paraphrase_test.txt", ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String", "1\t1\t2\ta\tb"])
    with pytest.raises(MalformedDataError, match=r"msr_paraphrase_train\.txt:2: expected 5 tab-separated columns, found 4"):
        TASKS.get("MRPC").prepare(root, EvalProtocol())
    for split, lines in {"train": ["good film\t1"], "dev": ["bad\t0"], "test": ["fine\t1", "meh\t7"]}.items():
        _write(base / "SST" / "binary" / f"sentiment-{split}", lines)
    with pytest.raises(MalformedDataError, match=r"sentiment-test:2: unknown label '7'"):
        TASKS.get("SST2").prepare(root, EvalProtocol())


def test_missing_files_are_named_with_how_to_get_them(tmp_path):
    with pytest.raises(MissingDataError, match=r"rt-polarity\.pos.*embench data download --task MR"):
        TASKS.get("MR").prepare(DataRoot(tmp_path), EvalProtocol())


def _slice_root(data_root: Path, dest: Path) -> Path:
    """A data root with small slices of the seven tasks' real files (every class kept)."""
    src, out = data_root / "senteval" / "downstream", dest / "senteval" / "downstream"

    def lines(rel: str, encoding: str = "utf-8") -> list[str]:
        return (src / rel).read_bytes().decode(encoding).splitlines()

    def per_class(rows: list[str], label, n: int) -> list[str]:
        seen: dict = {}
        return [r for r in rows if seen.setdefault(label(r), []).append(r) or len(seen[label(r)]) <= n]

    for rel in ("MR/rt-polarity.pos", "MR/rt-polarity.neg", "CR/custrev.pos", "CR/custrev.neg", "SUBJ/subj.objective",
                "SUBJ/subj.subjective", "MPQA/mpqa.pos", "MPQA/mpqa.neg"):
        _write(out / rel, lines(rel, "latin-1")[:60], "latin-1")
    for split, n in (("train", 200), ("dev", 60), ("test", 60)):
        _write(out / f"SST/binary/sentiment-{split}", lines(f"SST/binary/sentiment-{split}")[:n])
    trec = lambda r: r.split(":", 1)[0]  # noqa: E731
    _write(out / "TREC/train_5500.label", per_class(lines("TREC/train_5500.label", "latin-1"), trec, 12), "latin-1")
    _write(out / "TREC/TREC_10.label", per_class(lines("TREC/TREC_10.label", "latin-1"), trec, 8), "latin-1")
    for split, n in (("train", 120), ("test", 60)):
        rows = lines(f"MRPC/msr_paraphrase_{split}.txt")
        _write(out / f"MRPC/msr_paraphrase_{split}.txt", rows[: n + 1])
    return dest


def test_pair_features_follow_the_protocol_option():
    u, v = np.array([[1.0, -2.0]]), np.array([[3.0, 5.0]])
    assert pair_features(u, v, "uv").tolist() == [[1.0, -2.0, 3.0, 5.0, 2.0, 7.0, 3.0, -10.0]]
    assert pair_features(u, v, "senteval-code").tolist() == [[2.0, 7.0, 3.0, -10.0]]
    with pytest.raises(EmbenchError, match="for option pair_features; choose one of: senteval-code, uv"):
        EvalProtocol(pair_features="concat")


def test_pair_features_reach_the_classifier():
    """A label carried by the sign of u alone: [u, v, ...] sees it, SentEval code's [|u-v|, u*v] (v = 0) cannot."""
    from embench.tasks.senteval.reading import Samples
    from embench.tasks.senteval.transfer import score_transfer

    rng = np.random.default_rng(0)
    vecs = {"zero": np.zeros(4, dtype=np.float32)}

    def split(n: int, prefix: str) -> Samples:
        y = rng.integers(0, 2, n)
        a = []
        for i, label in enumerate(y):
            vec = rng.normal(size=4).astype(np.float32)
            vec[0] = (1 if label else -1) * (1.0 + abs(vec[0]))
            vecs[f"{prefix}{i}"] = vec
            a.append([f"{prefix}{i}"])
        return Samples(a, [["zero"]] * n, y)

    data = {"train": split(300, "tr"), "test": split(200, "te")}
    embed = lambda texts: np.stack([vecs[t] for t in texts])  # noqa: E731
    task = TASKS.get("MRPC")
    cfg = CONFIGS["prototyping"]
    uv = score_transfer(task, data, embed, cfg, 1111, device="cpu", features="uv")
    code = score_transfer(task, data, embed, cfg, 1111, device="cpu", features="senteval-code")
    assert uv.main >= 0.95 and code.main <= 0.65
    assert (uv.scores["features"], code.scores["features"]) == ("[u, v, |u-v|, u*v]", "[|u-v|, u*v]")


@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_tiny_model_runs_the_transfer_suite_end_to_end(data_root, tiny_bert_dir, tmp_path, cache_dir):
    from typer.testing import CliRunner

    from embench.cli import app

    root = _slice_root(data_root, tmp_path / "data")
    args = ["run", "--model", str(tiny_bert_dir), "--suite", "transfer", "--classifier", "prototyping",
            "--data", str(root), "--results-dir", str(tmp_path / "results"), "--cache-dir", str(cache_dir), "-f", "json", "-q",
            "--ci", "95"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout[result.stdout.index("{") :])["rows"][0]
    for col in ("MR", "CR", "SUBJ", "MPQA", "SST", "TREC", "MRPC"):
        assert 0.0 < row[col] <= 1.0
    assert row["Avg."] == pytest.approx(np.mean([row[c] for c in ("MR", "CR", "SUBJ", "MPQA", "SST", "TREC", "MRPC")]))
    for col in ("MR", "TREC", "MRPC", "Avg."):  # every accuracy has its bootstrap interval over test examples
        assert row[f"{col} low"] <= row[f"{col} high"] and row[f"{col} low"] <= row[col] + 0.02 and row[col] - 0.02 <= row[f"{col} high"]
    stored = [json.loads(p.read_text()) for p in (tmp_path / "results").rglob("*.json")]
    mr = next(r for r in stored if r["task"] == "MR")
    # nested k-fold: the items are out-of-fold predictions of all 120 examples; the pooled accuracy is
    # the mean of the (equal-sized) folds' accuracies that SentEval reports
    assert mr["items"]["kind"] == "accuracy" and mr["items"]["n"] == 120 and mr["ci"]["resamples"] == 1000
    assert mr["ci"]["point_from_items"] == pytest.approx(mr["scores"]["test_acc_exact"], abs=1e-9)
    assert mr["protocol"]["classifier"] == "prototyping"
    assert len(mr["scores"]["folds"]) == 5 and mr["scores"]["folds"][0]["penalty"] in PENALTIES
    mrpc = next(r for r in stored if r["task"] == "MRPC")
    assert mrpc["scores"]["features"] == "[|u-v|, u*v]" and "test_f1" in mrpc["scores"]
    assert mrpc["protocol"]["pair_features"] == "senteval-code"  # the default: SentEval's code
    # PROTOCOLS.md's [u, v, |u-v|, u*v]: a separate record, a different MRPC score, nothing else recomputed
    again = CliRunner().invoke(app, [*args[:3], "--task", "MRPC", *args[5:], "--pair-features", "uv"])
    assert again.exit_code == 0, again.output
    stored = [json.loads(p.read_text()) for p in (tmp_path / "results").rglob("*.json")]
    mrpcs = {r["protocol"]["pair_features"]: r for r in stored if r["task"] == "MRPC"}
    assert set(mrpcs) == {"uv", "senteval-code"}
    assert mrpcs["uv"]["scores"]["features"] == "[u, v, |u-v|, u*v]"
    assert len(stored) == 8
