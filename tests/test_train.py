"""The trainer: losses by hand, DDP = one process, training, checkpoints, resume, bad input."""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import sys

import numpy as np
import pytest
import torch

from embench.core.errors import EmbenchError, MalformedDataError
from embench.data.training_sets import read_sentences, read_triplets_csv, snli_triplets
from embench.train import METHODS, Batch, Outputs, TrainingDivergedError, make_config, resolve, train
from embench.train.crops import CropCorpus, chunks, split_sentences
from embench.train.distributed import DistInfo
from embench.train.losses import info_nce, mask_tokens, mlm_loss

pytestmark = pytest.mark.usefixtures("one_thread")


SENT = "This sentence is long enough to be kept by the crop filter, which wants one hundred characters or more"


# -- losses against hand computations ------------------------------------------------------------
def _hand_info_nce(a, p, tau, hn=None, alpha=1.0):
    """Eq. 1/5/8 of SimCSE written out with Python floats."""
    def cos(u, v):
        return sum(x * y for x, y in zip(u, v, strict=True)) / math.sqrt(sum(x * x for x in u) * sum(y * y for y in v))

    total = 0.0
    for i, ai in enumerate(a):
        num = math.exp(cos(ai, p[i]) / tau)
        den = sum(math.exp(cos(ai, pj) / tau) for pj in p)
        if hn is not None:
            den += sum((alpha if j == i else 1.0) * math.exp(cos(ai, hj) / tau) for j, hj in enumerate(hn))
        total += -math.log(num / den)
    return total / len(a)


A = [[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]
P = [[2.0, 0.0], [1.0, 1.0], [0.0, -1.0]]
H = [[0.5, 0.5], [-1.0, 0.0], [1.0, -3.0]]


def test_info_nce_equals_hand_computation_with_temperature():
    for tau in (0.05, 0.5, 1.0):
        got = float(info_nce(torch.tensor(A), torch.tensor(P), tau))
        assert got == pytest.approx(_hand_info_nce(A, P, tau), rel=1e-5)
    # two anchors by hand: cos = [[1, 1/sqrt2], [0, 1/sqrt2]], tau = 0.5
    a, p = [[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [1.0, 1.0]]
    r = math.sqrt(2)
    l0 = -math.log(math.exp(2) / (math.exp(2) + math.exp(r)))
    l1 = -math.log(math.exp(r) / (1 + math.exp(r)))
    assert float(info_nce(torch.tensor(a), torch.tensor(p), 0.5)) == pytest.approx((l0 + l1) / 2, rel=1e-6)


def test_hard_negatives_are_all_in_batch_and_the_own_one_weighted_by_alpha():
    a, p, h = torch.tensor(A), torch.tensor(P), torch.tensor(H)
    for alpha in (1.0, 0.5, 2.0):
        got = float(info_nce(a, p, 0.1, h, alpha=alpha))
        assert got == pytest.approx(_hand_info_nce(A, P, 0.1, H, alpha), rel=1e-5)
    assert float(info_nce(a, p, 0.1, h, alpha=2.0)) > float(info_nce(a, p, 0.1, h, alpha=1.0))


def test_mlm_term_equals_hand_cross_entropy_and_is_added_with_lambda():
    logits = torch.tensor([[[2.0, 0.0, 1.0], [0.0, 0.0, 0.0]], [[1.0, 3.0, 0.0], [0.5, 0.5, 2.0]]])
    labels = torch.tensor([[0, -100], [1, 2]])
    def ce(row, k):
        return -math.log(math.exp(row[k]) / sum(math.exp(x) for x in row))
    hand = (ce([2.0, 0.0, 1.0], 0) + ce([1.0, 3.0, 0.0], 1) + ce([0.5, 0.5, 2.0], 2)) / 3
    assert float(mlm_loss(logits, labels)) == pytest.approx(hand, rel=1e-6)
    method = METHODS.get("crop")(resolve(make_config(method="crop", temperature=0.2, mlm_weight=0.1)))
    method.forward = lambda module, batch: Outputs({"anchor": torch.tensor(A), "positive": torch.tensor(P)},
                                                   0.1 * mlm_loss(logits, labels))
    total = float(method.loss(None, Batch({"anchor": ["a"] * 3, "positive": ["p"] * 3}), DistInfo())[0])
    assert total == pytest.approx(_hand_info_nce(A, P, 0.2) + 0.1 * hand, rel=1e-5)


def test_excluded_candidates_leave_the_denominator_but_never_the_own_positive():
    """MultiCSR/GISTEmbed's false-negative filter: masked pairs are not negatives."""
    a, p, h = torch.tensor(A), torch.tensor(P), torch.tensor(H)
    def cos(u, v):
        return sum(x * y for x, y in zip(u, v, strict=True)) / math.sqrt(sum(x * x for x in u) * sum(y * y for y in v))
    mask = torch.zeros(3, 3, dtype=torch.bool)
    mask[0, 1] = mask[2, 0] = mask[1, 1] = True  # (1, 1) is anchor 1's own positive: it stays
    hand = 0.0
    for i in range(3):
        kept = [j for j in range(3) if not mask[i, j] or j == i]
        den = sum(math.exp(cos(A[i], P[j]) / 0.1) for j in kept)
        hand += -math.log(math.exp(cos(A[i], P[i]) / 0.1) / den)
    assert float(info_nce(a, p, 0.1, exclude=mask)) == pytest.approx(hand / 3, rel=1e-5)
    with_hard = torch.zeros(3, 6, dtype=torch.bool)
    with_hard[:, 3:] = True  # every hard negative left out: plain in-batch InfoNCE
    assert float(info_nce(a, p, 0.1, h, exclude=with_hard)) == pytest.approx(float(info_nce(a, p, 0.1)), rel=1e-6)


def test_mask_tokens_predicts_only_real_tokens_and_masks_most_of_them():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 100, (64, 40), generator=g)
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    masked, labels = mask_tokens(ids, special, mask_token_id=1, vocab_size=100, probability=0.15, generator=g)
    chosen = labels != -100
    assert not chosen[special].any()
    assert 0.10 < chosen.float().mean() < 0.20
    assert (labels[chosen] == ids[chosen]).all() and (masked[~chosen] == ids[~chosen]).all()
    assert 0.7 < (masked[chosen] == 1).float().mean() < 0.9


# -- DDP: two processes = one process on the concatenated batch -----------------------------------
class _ToyEncoder(torch.nn.Module):
    """Token embeddings, mean over the sequence, a linear layer: enough to carry gradients (and no
    dropout), cheap to import in spawned processes."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(50, 8)
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.proj(self.emb(ids).mean(1)))


def _toy_batch() -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    return torch.randint(0, 50, (3, 8, 5), generator=g)  # 3 views (anchor, positive, hard negative) x 8 x 5 tokens


def _toy_loss(ids: torch.Tensor, dist: DistInfo, wrap=None):
    model = _ToyEncoder()
    runner = wrap(model) if wrap else model
    z = runner(ids.reshape(-1, ids.shape[-1]))  # the views one after another, in one forward pass
    method = METHODS.get("sup-simcse")(resolve(make_config(method="sup-simcse", temperature=0.05, hard_negative_weight=2.0)))
    reps = dict(zip(("anchor", "positive", "hard"), z.chunk(3), strict=True))
    loss, _ = method.objective(Outputs(reps), Batch({}), dist)
    loss.backward()
    return float(loss.detach()), {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def _ddp_worker(rank: int, world: int, port: int, out: str) -> None:
    import torch.distributed as dist

    from embench.train.distributed import mean_over_processes

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        ids = _toy_batch()
        n = ids.shape[1] // world
        loss, grads = _toy_loss(ids[:, rank * n : (rank + 1) * n], DistInfo(rank, world),
                                torch.nn.parallel.DistributedDataParallel)
        loss = mean_over_processes(loss)
        torch.save({"loss": loss, "grads": grads}, f"{out}.{rank}")
        dist.barrier()  # neither process tears gloo down while the other still uses it (an abort at exit otherwise)
    finally:
        dist.destroy_process_group()
    # Leave without the interpreter's finalization: DDP keeps the gloo group alive past destroy_process_group, and
    # its worker thread frees the barrier's record of the prior all-reduce (whose tensor is a Python object) just
    # after the barrier returns. When that lands in finalization the thread cannot take the GIL and the process
    # aborts ("terminate called without an active exception"), 1 run in 10 on a 2-core machine; a core dump shows
    # the stack (ProcessGroupGloo::runLoop -> ~AsyncBarrierWork -> ~AsyncAllreduceWork -> decref). The results
    # are written and checked by the parent; an error before this line still fails the test.
    sys.stderr.flush()
    os._exit(0)


@pytest.mark.slow
def test_ddp_with_two_processes_matches_one_process_on_the_concatenated_batch(tmp_path):
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "ddp.pt"
    mp.spawn(_ddp_worker, args=(2, port, str(out)), nprocs=2, join=True)
    loss, grads = _toy_loss(_toy_batch(), DistInfo())
    for rank in (0, 1):
        ddp = torch.load(f"{out}.{rank}")
        assert ddp["loss"] == pytest.approx(loss, abs=1e-5)
        worst = max(float((ddp["grads"][k] - grads[k]).abs().max()) for k in grads)
        assert worst < 1e-5, f"rank {rank}: largest gradient difference {worst}"
    # the hard negatives of the other process count: dropping the gather changes the loss
    ids = _toy_batch()
    half, _ = _toy_loss(ids[:, :4], DistInfo())
    assert abs(half - loss) > 1e-3


# -- training on CPU -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def trained(tiny_bert_dir, data_root, tmp_path_factory):
    """50 steps of unsupervised SimCSE (mean pooling, MLP in training only) on a tiny random BERT,
    800 Wikipedia sentences of the data root, STS-B dev before and after."""
    out = tmp_path_factory.mktemp("simcse")
    lines = (data_root / "corpora" / "wiki1m-prefix.txt.gz")
    corpus = out / "wiki800.txt"
    corpus.write_text("\n".join(gzip.open(lines, "rt", encoding="utf-8").read().splitlines()[:800]) + "\n")
    cfg = make_config(method="unsup-simcse", model=str(tiny_bert_dir), data=[str(corpus)], data_root=str(data_root),
                      out=str(out / "run"), pooling="mean", mlp="train", batch_size=16, max_length=24, max_steps=50,
                      lr=1e-3, log_steps=1, eval_steps=50, progress=False, eval_max_length=32)
    return train(cfg)


@pytest.mark.slow
def test_tiny_random_model_loss_falls_over_50_steps(trained):
    losses = [h["loss"] for h in trained.history if "loss" in h]
    assert len(losses) == 50
    first, last = np.mean(losses[:5]), np.mean(losses[-5:])
    assert last < 0.5 * first, (first, last)
    evals = [h for h in trained.history if "eval/STSBenchmark-dev" in h]
    assert [e["step"] for e in evals] == [0, 50]
    assert trained.initial_score == evals[0]["eval/STSBenchmark-dev"]
    lines = [json.loads(x) for x in trained.metrics.read_text().splitlines()]
    assert lines == trained.history


def ours_dim(enc) -> int:
    return enc.encode_batch(["x"]).shape[1]


@pytest.mark.slow
def test_saved_checkpoint_loads_in_embench_and_sentence_transformers_with_the_same_vectors(trained):
    from sentence_transformers import SentenceTransformer

    import embench

    folder = trained.best_dir
    for f in ("config.json", "model.safetensors", "modules.json", "sentence_bert_config.json", "1_Pooling/config.json"):
        assert (folder / f).is_file(), f
    texts = ["A man is playing a guitar.", "Two dogs run across a snowy field.", "short"]
    enc = embench.load_model(folder)
    assert enc.pooling == "mean"  # the training-only MLP is not part of the checkpoint
    assert enc.model.config.hidden_size == ours_dim(enc)
    ours = enc.encode_batch(texts)
    st = SentenceTransformer(str(folder), device="cpu").encode(texts, convert_to_numpy=True)
    np.testing.assert_allclose(ours, st, atol=1e-5)
    meta = json.loads((folder / "embench_training.json").read_text())
    assert meta["method"] == "unsup-simcse" and meta["step"] == trained.best_step


def _small_crop_config(tiny_bert_dir, data_root, out, **kw):
    return make_config(method="crop", model=str(tiny_bert_dir), data=["20newsgroups"], data_root=str(data_root),
                       out=str(out), batch_size=8, max_length=32, max_examples=200, lr=1e-3, log_steps=1,
                       eval_steps=0, progress=False, **kw)


@pytest.mark.slow
def test_resume_continues_from_the_saved_step_and_matches_an_uninterrupted_run(tiny_bert_dir, data_root, tmp_path, monkeypatch):
    full = train(_small_crop_config(tiny_bert_dir, data_root, tmp_path / "full", max_steps=6, save_steps=3))
    with _failing_loss(monkeypatch, at_call=5, kind="interrupt"), pytest.raises(KeyboardInterrupt):
        train(_small_crop_config(tiny_bert_dir, data_root, tmp_path / "cut", max_steps=6, save_steps=3))
    assert json.loads((tmp_path / "cut/checkpoint-last/step.json").read_text())["step"] == 3
    resumed = train(_small_crop_config(tiny_bert_dir, data_root, tmp_path / "cut", max_steps=6, save_steps=3, resume=True))
    assert [h["step"] for h in resumed.history if "loss" in h] == [4, 5, 6]
    logged = [json.loads(x)["step"] for x in (tmp_path / "cut/metrics.jsonl").read_text().splitlines()]
    assert logged == [1, 2, 3, 4, 5, 6]  # the killed run's step 4 was never logged
    assert resumed.last_loss == pytest.approx(full.last_loss, rel=1e-4)
    from safetensors.torch import load_file

    a, b = load_file(full.best_dir / "model.safetensors"), load_file(resumed.best_dir / "model.safetensors")
    assert max(float((a[k] - b[k]).abs().max()) for k in a) < 1e-5
    # a finished run resumed: nothing to train, and the kept checkpoint is still its last step (not step 0)
    again = train(_small_crop_config(tiny_bert_dir, data_root, tmp_path / "full", max_steps=6, save_steps=3, resume=True))
    assert again.best_step == 6 and again.history == []


@pytest.mark.slow
def test_resume_inside_the_warm_up_takes_the_rates_and_weights_of_an_uninterrupted_run(tiny_bert_dir, data_root, tmp_path,
                                                                                        monkeypatch):
    def run(out, **kw):
        return train(_small_crop_config(tiny_bert_dir, data_root, tmp_path / out, max_steps=6, save_steps=2,
                                        warmup_steps=4, **kw))

    def rates(out):
        return [json.loads(x)["lr"] for x in (tmp_path / out / "metrics.jsonl").read_text().splitlines()]

    full = run("full")
    with _failing_loss(monkeypatch, at_call=4, kind="interrupt"), pytest.raises(KeyboardInterrupt):
        run("cut")
    assert json.loads((tmp_path / "cut/checkpoint-last/step.json").read_text())["step"] == 2  # inside the warm-up
    resumed = run("cut", resume=True)
    # the rate for the step after each logged one, transformers' schedule: s / 4 up to step 4, then (6 - s) / 2
    assert rates("full") == rates("cut") == pytest.approx([1e-3 * f for f in (0.25, 0.5, 0.75, 1.0, 0.5, 0.0)])
    from safetensors.torch import load_file

    a, b = load_file(full.best_dir / "model.safetensors"), load_file(resumed.best_dir / "model.safetensors")
    assert max(float((a[k] - b[k]).abs().max()) for k in a) < 1e-5


@pytest.mark.slow
def test_a_new_run_into_a_folder_holding_a_run_is_refused_and_overwrite_clears_that_run(tiny_bert_dir, data_root, tmp_path):
    """Else the new run's series interleaves with the old one's, and the old best/ can stand as the new run's."""
    out = tmp_path / "run"
    train(_small_crop_config(tiny_bert_dir, data_root, out, max_steps=4, save_every=2))
    (out / "notes.txt").write_text("mine")
    with pytest.raises(EmbenchError, match=r"out='.*run' holds a run of crop \(4 steps\) on .*train_config.json, "
                                           r"metrics.jsonl, best/, checkpoint-last/, checkpoints/\): continue it with resume"):
        train(_small_crop_config(tiny_bert_dir, data_root, out, max_steps=1))
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-000002", "step-000004"]  # untouched
    with pytest.raises(EmbenchError, match="give one of them"):
        train(_small_crop_config(tiny_bert_dir, data_root, out, max_steps=1, resume=True, overwrite=True))
    r = train(_small_crop_config(tiny_bert_dir, data_root, out, max_steps=1, overwrite=True))
    assert r.best_step == 1 and r.series == [] and not (out / "checkpoints").exists()
    assert json.loads((out / "best/embench_training.json").read_text())["step"] == 1
    assert (out / "notes.txt").read_text() == "mine"  # only the run's own outputs are removed


def _failing_loss(monkeypatch, at_call: int, kind: str):
    """The crop method's loss, interrupted (Ctrl-C) or made NaN at its ``at_call``-th call."""
    import contextlib

    from embench.train.methods.crop import Crop

    real, calls = Crop.loss, {"n": 0}

    def loss(self, module, batch, dist):
        calls["n"] += 1
        if calls["n"] == at_call and kind == "interrupt":
            raise KeyboardInterrupt
        value, logs = real(self, module, batch, dist)
        return (value * float("nan") if calls["n"] == at_call else value), logs

    monkeypatch.setattr(Crop, "loss", loss)
    return contextlib.nullcontext()


# -- bad input -----------------------------------------------------------------------------------
def test_empty_or_unreadable_corpus_is_an_error_naming_the_file(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    with pytest.raises(EmbenchError, match="empty.txt: the corpus is empty"):
        read_sentences(empty)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine line\n\xff\xfe broken\n")
    with pytest.raises(MalformedDataError, match=r"bad.txt:2: not valid UTF-8"):
        read_sentences(bad)
    corrupt = tmp_path / "corrupt.txt.gz"
    corrupt.write_bytes(b"this is not gzip data\n")
    with pytest.raises(EmbenchError, match="corrupt.txt.gz: cannot decompress it"):
        read_sentences(corrupt)
    with pytest.raises(EmbenchError, match="missing.txt"):
        read_sentences(tmp_path / "missing.txt")


def test_sentences_from_jsonl_are_its_text_fields_and_a_table_is_refused(tmp_path):
    """Not the raw lines: a JSONL file was trained on as '{"text": ...}' strings, a CSV with its header."""
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text('{"text": " sentence one "}\n\n{"text": "sentence two"}\n')
    assert read_sentences(jsonl) == ["sentence one", "sentence two"]
    jsonl.write_text('{"text": "sentence one"}\n{"text": "sent')  # a truncated last line
    with pytest.raises(MalformedDataError, match=r"s.jsonl:2"):
        read_sentences(jsonl)
    table = tmp_path / "s.csv"
    table.write_text("sentence\na sentence\n")
    with pytest.raises(EmbenchError, match=r"s.csv: a method that trains on sentences reads a text file"):
        read_sentences(table)


def test_documents_too_short_to_crop_are_counted_and_skipped_with_a_message(caplog):
    long_doc = ". ".join(f"{SENT} {i}" for i in range(4))
    assert len(chunks(long_doc)) == 3
    docs = [long_doc, "Too short. Really.", f"{SENT}. {SENT}.", long_doc]
    with caplog.at_level("WARNING"):
        corpus = CropCorpus.build(docs, source="docs.jsonl")
    assert (len(corpus), corpus.skipped, corpus.total) == (2, 2, 4)
    assert "2 of 4 documents in docs.jsonl are too short to crop" in caplog.text
    import random

    a, b = corpus.pair(0, random.Random(0))
    assert a != b and a in corpus.doc_chunks[0] and b in corpus.doc_chunks[0]
    with pytest.raises(EmbenchError, match="none of the 2 documents"):
        CropCorpus.build(["Too short.", "Also. Short."])


def test_crop_sentences_are_measured_as_split_then_stripped():
    """The 100-250 character test reads the sentence as '.' splits it (a leading space counts), as the authors'
    code does; the chunk holds the stripped sentences, each followed by '. '. By hand: ' ' + 99 characters is 100."""
    s99, s100 = "a" * 99, "b" * 100
    text = f"{s99}. {s99}. {s100}"  # split: 'aaa(99)', ' aaa(99)', ' bbb(100)'
    assert split_sentences(text) == [s99, s100]  # the first is 99 long; the other two are 100 and 101
    assert chunks(text) == [f"{s99}. {s100}. "]
    assert split_sentences(" " + "c" * 250) == []  # 251 as split


@pytest.mark.slow
def test_twenty_newsgroups_documents_kept_for_cropping_as_by_the_authors(data_root):
    from embench.data.training_sets import read_documents

    docs = read_documents(data_root / "tasks" / "twentynewsgroups" / "train.jsonl.gz")
    corpus = CropCorpus.build(docs, t=2)
    # the authors' chunking (text-embed-augm's data_stuff.py) keeps 6,589 of these 11,296 documents
    assert (corpus.total, corpus.skipped, len(corpus)) == (11296, 4707, 6589)


@pytest.mark.parametrize(("text", "said"), [
    # a quote opened on line 3 swallows the rest: it was named by line 4, where the lenient reader ended the record
    ('sent0,sent1,hard_neg\na,b,c\n"unclosed,quote,row\nA,B,C\n',
     "bad.csv:3: expected 3 comma-separated fields, found 1 (a quote opened in this record is never closed: the "
     "record runs from line 3 to the end, line 4)"),
    # the same with the field count right by chance: it was read as a triplet whose negative held the rest
    ('sent0,sent1,hard_neg\na,b,"c\nd,e,f\n',
     "bad.csv:2: a quote opened in this record is never closed: the record runs from line 2 to the end, line 3"),
    ('sent0,sent1,hard_neg\n"x\ny",p\nA,B,C\n',
     "bad.csv:2: expected 3 comma-separated fields, found 2 (a quoted field runs the record from line 2 to line 3)"),
])
def test_a_csv_record_over_several_lines_is_named_by_the_line_it_starts_on(tmp_path, text, said):
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    with pytest.raises(MalformedDataError, match=re.escape(said) + "$"):
        read_triplets_csv(bad)
    bad.write_text('sent0,sent1,hard_neg\na,b,"c\nd"\n')  # a closed quote over two lines is one sentence
    assert read_triplets_csv(bad) == [("a", "b", "c\nd")]


def test_malformed_csv_line_names_the_file_and_line(tmp_path):
    good = tmp_path / "nli.csv"
    good.write_text('sent0,sent1,hard_neg\nA man sleeps.,A person rests.,A man runs.\n"Quoted, with comma",b,c\n')
    assert read_triplets_csv(good) == [("A man sleeps.", "A person rests.", "A man runs."), ("Quoted, with comma", "b", "c")]
    bad = tmp_path / "bad.csv"
    bad.write_text("sent0,sent1,hard_neg\na,b,c\nonly,two\n")
    with pytest.raises(MalformedDataError, match=r"bad.csv:3: expected 3 comma-separated fields, found 2"):
        read_triplets_csv(bad)
    header = tmp_path / "header.csv"
    header.write_text("premise,hypothesis\na,b\n")
    with pytest.raises(MalformedDataError, match=r"header.csv:1: expected the header sent0,sent1,hard_neg"):
        read_triplets_csv(header)


def test_a_triplet_csv_with_a_byte_order_mark_reads_and_bad_bytes_name_their_line(tmp_path):
    """A spreadsheet's CSV (UTF-8 with a BOM) was refused as "expected the header sent0,sent1,hard_neg, found
    \\ufeffsent0,..." (the BOM invisible), and bytes that are not UTF-8 were named by their offset, not their line."""
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbfsent0,sent1,hard_neg\na,b,c\n")
    assert read_triplets_csv(bom) == [("a", "b", "c")]
    latin1 = tmp_path / "latin1.csv"
    latin1.write_bytes(b"sent0,sent1,hard_neg\na,b,c\ncaf\xe9,b,c\n")
    with pytest.raises(MalformedDataError, match=r"latin1\.csv:3: not valid UTF-8"):
        read_triplets_csv(latin1)


def test_a_corpus_with_a_byte_order_mark_does_not_keep_it_in_its_first_sentence(tmp_path):
    """read_sentences kept the BOM at the start of the corpus's first sentence (another text than the one written)."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes("\ufeffone sentence\ntwo\n".encode())
    assert read_sentences(corpus) == ["one sentence", "two"]


def test_snli_files_of_the_data_root_give_premise_entailment_contradiction_triplets(data_root):
    from embench.data.root import DataRoot

    rows = snli_triplets(DataRoot(data_root))
    assert 5000 < len(rows) < 7000  # data README: about 5.9k
    s1 = (DataRoot(data_root).senteval / "SNLI" / "s1.dev").read_text().splitlines()
    s2 = (DataRoot(data_root).senteval / "SNLI" / "s2.dev").read_text().splitlines()
    lab = (DataRoot(data_root).senteval / "SNLI" / "labels.dev").read_text().splitlines()
    p, e, c = rows[0]
    pairs = {(a.strip(), b.strip(), label.strip()) for a, b, label in zip(s1, s2, lab, strict=True)}
    assert (p, e, "entailment") in pairs and (p, c, "contradiction") in pairs


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_nan_loss_before_any_resume_checkpoint_says_there_is_none_and_writes_none(tiny_bert_dir, data_root, tmp_path, monkeypatch):
    cfg = _small_crop_config(tiny_bert_dir, data_root, tmp_path / "nan", max_steps=10, save_steps=100)
    with _failing_loss(monkeypatch, at_call=3, kind="nan"), pytest.raises(
            TrainingDivergedError, match=r"loss became nan at step 3.*No resume checkpoint was written before it"):
        train(cfg)
    assert not (tmp_path / "nan" / "checkpoint-last").exists()  # the weights that gave NaN are not "good"


# -- configuration and CLI -----------------------------------------------------------------------
@pytest.mark.parametrize(("given", "message"), [
    ({"batch_size": "eight"}, "batch_size must be an integer, got 'eight'"),  # in Python: make_config's keywords
    ({"max_steps": 2.5}, "max_steps must be an integer, got 2.5"),
    ({"lr": True}, "lr must be a number, got True"),
    ({"temperature": "abc"}, "temperature must be a number, got 'abc'"),
])
def test_an_option_of_the_wrong_type_from_a_config_or_set_is_named_before_anything_runs(given, message):
    with pytest.raises(EmbenchError, match=re.escape(message)):
        resolve(make_config(method="unsup-simcse", **given))


def test_config_file_yaml_or_toml_then_cli_overrides(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text("method: crop\nlr: 1.0e-4\nbatch-size: 32\ndata: [a.txt, b.txt]\n")
    t = tmp_path / "c.toml"
    t.write_text('[train]\nmethod = "sup-simcse"\ntemperature = 0.1\n')
    cy = make_config(y, batch_size=16)
    assert (cy.method, cy.lr, cy.batch_size, cy.data) == ("crop", 1e-4, 16, ["a.txt", "b.txt"])
    ct = make_config(t)
    assert (ct.method, ct.method_options["temperature"]) == ("sup-simcse", 0.1)
    resolved = resolve(ct)  # SimCSE Table A.1 (supervised, base) and the official script
    assert (resolved.pooling, resolved.method_options.mlp, resolved.lr, resolved.max_length) == ("cls", "keep", 5e-5, 32)
    assert (resolved.batch_size, resolved.epochs, resolved.warmup_ratio, resolved.method_options.temperature) == (512, 3, 0.0, 0.1)
    # YAML 1.1 reads 1e-4 (an exponent, no dot) as a string; the config takes it as the number, as TOML and JSON would
    e = tmp_path / "e.yaml"
    e.write_text("method: sup-simcse\nlr: 1e-4\ntemperature: 5E-2\nmodel: 1e-4-model\n")
    ce = make_config(e)
    assert (ce.lr, ce.method_options["temperature"], ce.model) == (1e-4, 0.05, "1e-4-model")
    bad = tmp_path / "bad.yaml"
    bad.write_text("temprature: 0.1\n")
    with pytest.raises(EmbenchError, match="'temprature' is neither a training option nor an option of method unsup-simcse. Did you mean 'temperature'"):
        make_config(bad)
    with pytest.raises(EmbenchError, match="unknown training method 'simsce'. Did you mean"):
        make_config(method="simsce")


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_cli_train_command_runs_and_keeps_a_checkpoint(tiny_bert_dir, data_root, tmp_path):
    from typer.testing import CliRunner

    from embench.cli import app

    cfg = tmp_path / "run.toml"
    cfg.write_text('method = "dropout"\nbatch_size = 8\nmax_length = 24\nmax_examples = 100\n')
    out = tmp_path / "cli"
    res = CliRunner().invoke(app, [
        "train", "--config", str(cfg), "--model", str(tiny_bert_dir), "--train-data", "20newsgroups", "--out", str(out),
        "--data", str(data_root), "--max-steps", "3", "--eval-steps", "0", "--set", "log_steps=1", "--quiet",
    ])
    assert res.exit_code == 0, res.output
    assert "kept:" in res.output
    assert (out / "best" / "modules.json").is_file()
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 3
    saved = json.loads((out / "train_config.json").read_text())
    assert (saved["method"], saved["batch_size"], saved["pooling"]) == ("dropout", 8, "mean")


# -- methods and options -------------------------------------------------------------------------
@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_sup_simcse_on_snli_keeps_the_mlp_as_the_pooler_head_of_the_checkpoint(tiny_bert_dir, data_root, tmp_path):
    import embench

    r = train(make_config(method="sup-simcse", model=str(tiny_bert_dir), data=["snli"], data_root=str(data_root),
                          out=str(tmp_path / "sup"), batch_size=8, max_length=24, max_steps=3, max_examples=64,
                          eval_steps=0, progress=False, log_steps=1))
    assert all(math.isfinite(h["loss"]) for h in r.history if "loss" in h)
    meta = json.loads((r.best_dir / "embench_training.json").read_text())
    assert (meta["pooling"], meta["sentence_transformers"]) == ("cls", True)  # [CLS] + the head as a Dense(tanh)
    enc = embench.load_model(r.best_dir)
    assert enc.pooling == "cls"
    from transformers import AutoModel, AutoTokenizer

    m, tok = AutoModel.from_pretrained(r.best_dir).eval(), AutoTokenizer.from_pretrained(r.best_dir)
    with torch.no_grad():
        want = m(**tok(["A dog runs."], return_tensors="pt")).pooler_output.numpy()
    np.testing.assert_allclose(enc.encode_batch(["A dog runs."]), want, atol=1e-5)
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(r.best_dir), device="cpu")  # the same folder (tests/test_st_export.py: every pooler)
    np.testing.assert_allclose(st.encode(["A dog runs."], convert_to_numpy=True), want, atol=1e-5)


@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_mlm_auxiliary_loss_and_freezing_embeddings_and_first_layers(tiny_bert_dir, data_root, tmp_path):
    from safetensors.torch import load_file

    cfg = _small_crop_config(tiny_bert_dir, data_root, tmp_path / "mlm", max_steps=3, mlm_weight=0.1,
                             freeze_embeddings=True, freeze_layers=1)
    r = train(cfg)
    assert all(math.isfinite(h["loss"]) for h in r.history if "loss" in h)
    before, after = load_file(tiny_bert_dir / "model.safetensors"), load_file(r.best_dir / "model.safetensors")
    def strip(k):
        return k.removeprefix("bert.")
    after = {strip(k): v for k, v in after.items()}
    before = {strip(k): v for k, v in before.items()}
    frozen = [k for k in after if k.startswith(("embeddings.", "encoder.layer.0."))]
    trained_keys = [k for k in after if k.startswith("encoder.layer.1.")]
    assert frozen and trained_keys
    assert all(torch.equal(before[k], after[k]) for k in frozen)
    assert any(not torch.equal(before[k], after[k]) for k in trained_keys)


def test_a_models_own_length_is_its_tokenizers_within_its_positions():
    from types import SimpleNamespace as NS

    from embench.models.max_length import model_max_length

    assert model_max_length(NS(max_position_embeddings=512), NS(model_max_length=256)) == 256
    # a tokenizer saved with a smaller model (512 asked, 128 positions): the positions bound it
    assert model_max_length(NS(max_position_embeddings=128), NS(model_max_length=512)) == 128
    assert model_max_length(NS(max_position_embeddings=514, model_type="roberta"), NS(model_max_length=10**30)) == 512
    assert model_max_length(NS(), NS(model_max_length=10**30)) == 512


@pytest.mark.slow
def test_checkpoints_are_evaluated_and_exported_at_the_models_own_length_unless_asked(tiny_bert_dir, data_root, tmp_path,
                                                                                        monkeypatch):
    """Training truncates at max_length (24 here); model selection and the saved checkpoint do not, as the
    authors evaluate untruncated (issue 31, item 3). --set eval_max_length / export_max_length still choose."""
    from transformers import AutoConfig, AutoTokenizer

    import embench.models.loader as loader

    own = loader.model_max_length(AutoConfig.from_pretrained(tiny_bert_dir), AutoTokenizer.from_pretrained(tiny_bert_dir))
    assert own not in (24, 16)
    seen = []
    real = loader.load_model
    monkeypatch.setattr(loader, "load_model", lambda *a, **k: seen.append(k.get("max_length")) or real(*a, **k))

    def run(out, **kw):
        return train(make_config(method="unsup-simcse", model=str(tiny_bert_dir), data=["corpora"], data_root=str(data_root),
                                 out=str(tmp_path / out), batch_size=8, max_length=24, max_steps=2, max_examples=32,
                                 eval_steps=2, eval_tasks=["STS12"], progress=False, log_steps=1, **kw))

    r = run("default")
    assert seen and set(seen) == {own}  # every evaluation at the model's own length
    meta = json.loads((r.best_dir / "embench_training.json").read_text())
    assert meta["max_length"] == own
    from sentence_transformers import SentenceTransformer  # it keeps the length where its version does

    assert SentenceTransformer(str(r.best_dir), device="cpu").max_seq_length == own
    seen.clear()
    r = run("asked", eval_max_length=16, export_max_length=24)
    assert set(seen) == {16}
    assert json.loads((r.best_dir / "embench_training.json").read_text())["max_length"] == 24


@pytest.mark.slow
def test_the_untrained_model_is_never_kept_as_best_unless_asked(tiny_bert_dir, data_root, tmp_path, caplog, monkeypatch):
    """Step 0 is logged as the initial score; a run whose training only lowers the score keeps its best trained
    step and says so (issue 31, item 4); select_initial lets step 0 win. The scores are scripted."""
    from embench.train.callbacks import Evaluator

    scripted = {0: 0.50, 1: 0.30, 2: 0.40}
    monkeypatch.setattr(Evaluator, "__call__", lambda self, model, step: {"STS12": scripted[step]})

    def run(out, **kw):
        return train(make_config(method="unsup-simcse", model=str(tiny_bert_dir), data=["corpora"], data_root=str(data_root),
                                 out=str(tmp_path / out), batch_size=8, max_length=24, max_steps=2, max_examples=32,
                                 eval_steps=1, eval_tasks=["STS12"], progress=False, log_steps=1, **kw))

    with caplog.at_level("WARNING"):
        r = run("authors")
    assert (r.initial_score, r.best_step, r.best_score) == (0.50, 2, 0.40)
    assert "below the untrained model (step 0: 0.5000)" in caplog.text
    assert json.loads((r.best_dir / "embench_training.json").read_text())["step"] == 2
    chosen = run("initial", select_initial=True)
    assert (chosen.best_step, chosen.best_score) == (0, 0.50)


def _rates(kind, total, warmup, make=None):
    from embench.train.schedule import make_scheduler

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = (make or make_scheduler)(opt, total, warmup, kind)
    out = []
    for _ in range(total):
        out.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    return out


def test_constant_schedule_keeps_the_peak_after_the_warm_up():
    # by hand: warm-up step / 2 for steps 0-1 (transformers' form), then 1 (constant) or (6 - step) / 4 (linear)
    assert _rates("constant", 6, 2) == [0.0, 0.5, 1.0, 1.0, 1.0, 1.0]
    assert _rates("linear", 6, 2) == [0.0, 0.5, 1.0, 0.75, 0.5, 0.25]


def test_the_warm_up_is_the_one_of_transformers_the_recipes_cite():
    """The crop recipe's code calls get_linear_schedule_with_warmup, BeLLM's and SimCSE's train through transformers'
    Trainer (the same schedule): step s of the warm-up at s / W. embench's own (s + 1) / W ran one step ahead."""
    assert _rates("linear", 10, 4)[:6] == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0, 5 / 6])  # transformers', by hand


@pytest.mark.slow  # transformers.optimization imports peft and bitsandbytes: 5 s
def test_the_schedules_equal_transformers_own_functions():
    from transformers import get_constant_schedule_with_warmup, get_linear_schedule_with_warmup

    for total, warmup in ((10, 4), (7, 0), (5, 5), (40, 3), (3, 8)):
        assert _rates("linear", total, warmup) == _rates(
            "linear", total, warmup, lambda opt, t, w, _: get_linear_schedule_with_warmup(opt, w, t))
        assert _rates("constant", total, warmup) == _rates(
            "constant", total, warmup, lambda opt, t, w, _: get_constant_schedule_with_warmup(opt, w))


def test_warmup_steps_replace_the_ratio_and_stop_at_the_run_end():
    from embench.train.schedule import warmup_steps

    cfg = resolve(make_config(method="unsup-simcse", model="m", warmup_ratio=0.5))
    assert warmup_steps(cfg, total=1000, per_epoch=1000) == 500
    assert warmup_steps(resolve(make_config(method="unsup-simcse", model="m", warmup_steps=100)), 1000, 1000) == 100
    assert warmup_steps(resolve(make_config(method="unsup-simcse", model="m", warmup_steps=100)), 40, 40) == 40
    with pytest.raises(EmbenchError, match="warmup"):
        resolve(make_config(method="unsup-simcse", model="m", warmup_steps=-1))


@pytest.mark.slow
def test_series_checkpoints_carry_their_steps_scores_and_do_not_claim_to_be_kept(tiny_bert_dir, data_root, tmp_path,
                                                                                 monkeypatch):
    """A --save-every checkpoint of an evaluated step said "No evaluation score at this step" and "kept: step 2"."""
    from embench.train.callbacks import Evaluator

    monkeypatch.setattr(Evaluator, "__call__", lambda self, model, step: {"STS12": {0: 0.1, 2: 0.6, 3: 0.4}[step]})
    r = train(make_config(method="unsup-simcse", model=str(tiny_bert_dir), data=["corpora"], data_root=str(data_root),
                          out=str(tmp_path / "se"), batch_size=8, max_length=24, max_steps=3, max_examples=32,
                          eval_steps=2, eval_tasks=["STS12"], progress=False, log_steps=1, save_every=1))
    assert r.best_step == 2 and [p.name for p in r.series] == ["step-000001", "step-000002", "step-000003"]
    cards = {p.name: (p / "README.md").read_text() for p in r.series}
    assert "No evaluation score at this step" in cards["step-000001"] and "saved without an evaluation" in cards["step-000001"]
    assert "| STS12 | 60.00 |" in cards["step-000002"] and "| STS12 | 40.00 |" in cards["step-000003"]
    assert "- saved: step 3 of 3: a checkpoint of the --save-every series" in cards["step-000003"]
    assert not any("kept: step" in c for c in cards.values())
    assert json.loads((r.series[1] / "embench_training.json").read_text())["scores"] == {"STS12": 0.6}


@pytest.mark.slow
def test_save_every_help_names_the_folders_the_series_writes():
    from typer.testing import CliRunner

    from embench.cli.app import app

    out = "".join(CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "OUT/checkpoints/step-000200(thestep,sixdigits)" in out  # it said step-N; the folders are step-000002
