"""--truncate-dim and --quantize: sentence-transformers' truncate_dim and quantize_embeddings as evaluation axes.

The scores are checked against sentence-transformers' EmbeddingSimilarityEvaluator(truncate_dim=, precision=)
on all-MiniLM-L6-v2 and STS-B test (raw text: the sentences its evaluator is given), the quantisation against
a hand computation and against ``quantize_embeddings`` itself.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import embench
from embench.cli import app
from embench.core.errors import EmbenchError
from embench.data.root import DataRoot
from embench.encoding.quantize import PRECISIONS, calibration_ranges, quantize, scored_form
from embench.encoding.vector_axes import VectorAxis, check_dims, one_axis, vector_axes
from embench.tasks import TASKS

runner = CliRunner()
# the configurations compared with sentence-transformers: every precision at 128 dimensions, and int8 at all 384
AXES = [(128, None), (128, "float32"), (128, "int8"), (128, "uint8"), (128, "binary"), (128, "ubinary"), (None, "int8")]
# embench's cosine is computed in float64, sentence-transformers' in float32: on integer and bit vectors, whose
# cosines tie often, float32 rounding breaks some ties (STS-B, 128 bits: 1,255 distinct float32 cosines for 1,164
# distinct values), which moves Spearman by up to ~1.3e-5 here; with its float32 cosine the scores are equal
COSINE_WIDTH = 3e-5


# ---------------------------------------------------------------- the quantisation, by hand

def test_int8_and_uint8_buckets_by_hand():
    # dimension 0 spans [0, 255]: a step of exactly 1; dimension 1 is constant: a step of 0 counts as 1
    x = np.array([[0.0, 3.0], [100.5, 3.0], [255.0, 3.0]], dtype=np.float32)
    assert quantize(x, "uint8").tolist() == [[0, 0], [100, 0], [255, 0]]  # floor((x - min) / step)
    assert quantize(x, "int8").tolist() == [[-128, -128], [-28, -128], [127, -128]]  # less 128
    # ranges from a calibration set: values outside them are clipped to the first and last bucket
    ranges = calibration_ranges(np.array([[50.0, 0.0], [305.0, 2.55]], dtype=np.float32))
    assert quantize(x, "uint8", ranges).tolist() == [[0, 255], [50, 255], [205, 255]]
    assert scored_form(quantize(x, "int8"), "int8").dtype == np.float32


def test_binary_and_ubinary_keep_the_sign_bits_packed_by_hand():
    x = np.array([[0.5, -1.0, 0.0, 2.0, -0.1, -3.0, 0.0, -2.0, 1.0]], dtype=np.float32)  # 9 dims: two bytes
    # bits 1 0 0 1 0 0 0 0 | 1 (0 is not > 0): 0b10010000 = 144, 0b10000000 = 128
    assert quantize(x, "ubinary").tolist() == [[144, 128]]
    assert quantize(x, "binary").tolist() == [[16, 0]]  # less 128, as int8
    bits = [1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]  # unpacked, the padding bits 0
    assert scored_form(quantize(x, "binary"), "binary").tolist() == [bits]
    assert scored_form(quantize(x, "ubinary"), "ubinary").tolist() == [bits]


def test_equal_cosines_of_bit_vectors_are_ties_as_exact_arithmetic_ranks_them():
    """float64 separated equal cosines (2/(sqrt2*sqrt2) = 0.9999999999999998 against 1.0), so at 7 to 16 bits Spearman
    moved by up to 0.3 points from exact ties; the peer here is the rational sign(dot)*dot^2/(|a|^2|b|^2) per pair."""
    from fractions import Fraction

    from scipy.stats import spearmanr

    from embench.tasks.sts.scoring import similarity

    rng = np.random.default_rng(0)
    a, b = (scored_form(np.packbits(rng.random((600, 7)) > 0.5, axis=1), "ubinary")[:, :7] for _ in range(2))
    gold = rng.random(600)
    exact = []
    for u, v in zip(a.astype(int), b.astype(int), strict=True):
        dot, squares = int(u @ v), int(u @ u) * int(v @ v)
        exact.append(float(Fraction(dot * abs(dot), squares)) if squares else 0.0)
    ours = similarity(a, b)
    assert len(np.unique(ours)) == len(np.unique(exact))  # one float per exact value
    assert spearmanr(ours, gold)[0] == pytest.approx(spearmanr(exact, gold)[0], abs=1e-12)
    plain = rng.standard_normal((5, 4))  # float vectors: the cosines as computed
    assert np.allclose(similarity(plain, plain[::-1]), np.sum(plain * plain[::-1], 1)
                       / np.linalg.norm(plain, axis=1) / np.linalg.norm(plain[::-1], axis=1), atol=1e-15)


def test_truncation_comes_before_the_normalisation_and_only_a_precision_normalises():
    x = np.array([[3.0, 4.0, 12.0], [0.0, 2.0, 0.0]], dtype=np.float32)
    # sentence-transformers truncates the last module's output, then (its evaluator, with a precision) normalises
    assert np.allclose(VectorAxis(2, "float32").transform(x), [[0.6, 0.8], [0.0, 1.0]])
    assert VectorAxis(2, None).transform(x).tolist() == [[3.0, 4.0], [0.0, 2.0]]  # no precision: as truncated
    assert VectorAxis(None, None).transform(x) is x


def test_int8_is_calibrated_on_every_text_of_the_task_and_the_set_is_recorded():
    rng = np.random.default_rng(0)
    texts = [f"t{i}" for i in range(20)]
    table = dict(zip(texts, rng.normal(size=(20, 6)).astype(np.float32), strict=True))
    embed = lambda ts: np.stack([table[t] for t in ts])  # noqa: E731
    axis = VectorAxis(4, "int8")
    scored = axis.embedder(embed, texts + texts[:5])  # duplicates, as pairs bring them, change no minimum or maximum
    side = scored(texts[:3])
    everything = axis.reduce(embed(texts))
    assert side.tolist() == scored_form(quantize(axis.reduce(embed(texts[:3])), "int8", calibration_ranges(everything)), "int8").tolist()
    assert side.tolist() != scored_form(quantize(axis.reduce(embed(texts[:3])), "int8"), "int8").tolist()  # not its own
    prov = scored.provenance(6)
    assert prov["embedding_dim"] == 4 and prov["truncate_dim"] == 4 and prov["quantize"] == "int8"
    assert prov["quantize_calibration"]["texts"] == 20 and len(prov["quantize_calibration"]["digest"]) == 16
    assert "every split's texts of a transfer task" in prov["quantize_calibration"]["set"]  # not "both sides of each pair" alone
    assert "calibration" not in json.dumps(VectorAxis(4, "binary").embedder(embed, texts).provenance(6))


# ---------------------------------------------------------------- options and errors

def test_axes_are_every_dimension_times_every_precision_once():
    assert vector_axes() == [VectorAxis()]
    assert vector_axes([384, 128, 128], "int8") == [VectorAxis(384, "int8"), VectorAxis(128, "int8")]
    assert [(a.truncate_dim, a.quantize) for a in vector_axes(64, ["binary", "uint8"])] == [(64, "binary"), (64, "uint8")]
    assert VectorAxis(128, "int8").row_name("m") == "m (dim 128, int8)" and VectorAxis().row_name("m") == "m"


@pytest.mark.parametrize("dim", [0, -4])
def test_a_truncation_of_no_dimensions_is_an_error_naming_the_option(dim):
    with pytest.raises(EmbenchError, match=f"--truncate-dim {dim}: .* 1 or more"):
        vector_axes(dim)


def test_a_truncation_longer_than_the_vectors_is_an_error_naming_the_option_and_the_length():
    with pytest.raises(EmbenchError, match="--truncate-dim 512 is larger than the 384 dimensions of M's vectors; choose 1 to 384"):
        check_dims(vector_axes([128, 512]), 384, "M")
    check_dims(vector_axes([384, 1]), 384, "M")


def test_an_unknown_precision_is_an_error_listing_the_choices():
    with pytest.raises(EmbenchError, match="--quantize 'int4' is not a precision; choose one of: float32, int8, uint8, binary, ubinary"):
        vector_axes(quantize="int4")
    r = runner.invoke(app, ["run", "-m", "M", "--quantize", "int4"])
    assert r.exit_code == 2 and "int4" in r.output and "'float32', 'int8', 'uint8', 'binary', 'ubinary'" in r.output


def test_compare_takes_one_configuration():
    one_axis(128, "int8")
    with pytest.raises(EmbenchError, match=r"compare takes one configuration of each model: give one --truncate-dim "
                                           r"and one --quantize \(run it once per dimension"):
        one_axis([128, 64])
    with pytest.raises(EmbenchError, match=r"give one truncate_dim and one quantize \(run"):  # the Python API's names
        embench.compare("M", "N", quantize=["int8", "binary"])


def test_cli_names_are_the_precisions():
    from embench.cli.options import PRECISION_NAMES

    assert PRECISION_NAMES == PRECISIONS


def test_the_options_reach_the_api_of_run_mteb_compare_and_audit(captured):
    given = ["--truncate-dim", "256", "--truncate-dim", "64", "--quantize", "int8"]
    for command, api in ((["run", "-t", "STS12", "-q"], "evaluate"), (["mteb", "run"], "evaluate"),
                         (["compare", "-m", "N"], "compare"), (["audit"], "audit")):
        r = runner.invoke(app, [*command, "-m", "M", *given])
        assert r.exit_code == 0, r.output
        assert captured[api]["truncate_dim"] == [256, 64] and captured[api]["quantize"] == ["int8"], command
        assert type(captured[api]["quantize"][0]) is str  # the plain value, not the CLI's Enum


# ---------------------------------------------------------------- end to end with a tiny model

@pytest.mark.slow
def test_run_gives_a_row_per_dimension_from_one_encoding_and_a_new_one_reuses_the_cache(env, tiny_bert_dir, one_thread):
    args = ["run", "-m", str(tiny_bert_dir), "-t", "STS-B", "--stsb-split", "dev", "-q", "-f", "json"]
    r = runner.invoke(app, [*args, "--truncate-dim", "32", "--truncate-dim", "16", "--truncate-dim", "8", "--quantize", "uint8"])
    assert r.exit_code == 0, r.output
    name = str(tiny_bert_dir)  # a folder's model name is its path
    assert [row["model"] for row in json.loads(r.stdout)["rows"]] == [f"{name} (dim {d}, uint8)" for d in (32, 16, 8)]
    records = embench.results(env / "results", model=name)
    assert len({r.key for r in records}) == 3 and {r.encoder["truncate_dim"] for r in records} == {32, 16, 8}
    encoded = [r.provenance["texts_encoded"] for r in records]
    assert sum(encoded) == max(encoded) > 0  # one pass: its texts counted once, under the first dimension
    again = runner.invoke(app, [*args, "--truncate-dim", "4", "--label", "tiny"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["rows"][0]["model"] == "tiny (dim 4)"
    new = next(r for r in embench.results(env / "results", model=name) if r.encoder.get("truncate_dim") == 4)
    assert new.provenance["texts_encoded"] == 0 and new.provenance["embedding_dim"] == 4 and "quantize" not in new.encoder
    too_long = runner.invoke(app, [*args, "--truncate-dim", "64"]).exception  # embench's main() prints these
    assert isinstance(too_long, EmbenchError) and "--truncate-dim 64 is larger than the 32 dimensions" in str(too_long)
    assert "--truncate-dim 0: " in str(runner.invoke(app, [*args, "--truncate-dim", "0"]).exception)


@pytest.mark.slow
def test_status_and_unsaved_tell_the_rows_of_one_task_apart(data_root, tiny_bert_dir, one_thread, tmp_path, monkeypatch):
    """Evaluation.status kept one entry per task: truncate_dim=[16, 8], the first stored and the second computed,
    read {'STSBenchmark': 'computed'}. A task of one row keeps its name as the key."""
    from embench.evaluation.results import ResultStore

    opts = dict(tasks=["STS-B"], stsb_split="dev", data=data_root, results_dir=tmp_path / "r", cache_dir=tmp_path / "c",
                progress=False)
    assert embench.evaluate(str(tiny_bert_dir), truncate_dim=16, **opts).status == {"STSBenchmark": "computed"}
    both = embench.evaluate(str(tiny_bert_dir), truncate_dim=[16, 8], **opts)
    assert both.status == {"STSBenchmark (dim 16)": "stored", "STSBenchmark (dim 8)": "computed"}
    assert {both.key(r) for r in both.records} == set(both.status)

    def full(self, record, items=None):  # the disk fills up: the computed row is not saved, the stored one needs not be
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ResultStore, "save", full)
    again = embench.evaluate(str(tiny_bert_dir), truncate_dim=[16, 4], **opts)
    assert again.status == {"STSBenchmark (dim 16)": "stored", "STSBenchmark (dim 4)": "computed"}
    assert list(again.unsaved) == ["STSBenchmark (dim 4)"] and "No space left on device" in again.unsaved["STSBenchmark (dim 4)"]


@pytest.mark.slow
def test_audit_varies_dimension_and_precision_and_draws_score_against_dimension(env, tiny_bert_dir, one_thread, tmp_path):
    r = runner.invoke(app, ["audit", "-m", str(tiny_bert_dir), "--knobs", "truncate-dim,quantize", "-t", "STS-B",
                            "--truncate-dim", "16", "--truncate-dim", "8", "--quantize", "int8", "--quantize", "uint8",
                            "--figures", str(tmp_path / "fig"), "-f", "csv"])
    assert r.exit_code == 0, r.output
    assert "truncate_dim=16" in r.stdout and "quantize=uint8" in r.stdout
    assert "dim,as encoded,int8,uint8" in r.stdout  # the grid: a row per dimension, a column per precision
    figure = tmp_path / "fig" / f"{tiny_bert_dir.name}-score_by_dimension.png"
    assert figure.stat().st_size > 10_000 and figure.with_suffix(".pdf").is_file()


# ---------------------------------------------------------------- equal to sentence-transformers on all-MiniLM-L6-v2

@pytest.fixture(scope="module")
def stsb(data_root):
    """STS-B test as sentence-transformers' evaluator is given it: the original sentences (embench --text raw)."""
    group, _ = TASKS.get("STSBenchmark").read(DataRoot(data_root), "test", "raw")
    return group


@pytest.fixture(scope="module")
def ours(data_root, minilm_cache, tmp_path_factory):
    """Every configuration of AXES (and more) from one embench run: one encoding pass."""
    ev = embench.evaluate("all-MiniLM-L6-v2", tasks=["STSBenchmark"], text="raw", truncate_dim=[128, None],
                          quantize=[None, *PRECISIONS], data=data_root, results_dir=tmp_path_factory.mktemp("r"),
                          cache_dir=minilm_cache, device="cpu", progress=False)
    assert ev.encode_stats["encoded"] + ev.encode_stats["from_cache"] == ev.encode_stats["unique"]
    return {(r.encoder.get("truncate_dim"), r.encoder.get("quantize")): r for r in ev.records}


@pytest.fixture(scope="module")
def st_evaluate(stsb):
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    def run(model, dim, precision):
        # batches of 128 texts rather than its default 16: the same vectors but for padding, three times faster
        evaluator = EmbeddingSimilarityEvaluator(stsb.left, stsb.right, list(stsb.gold), truncate_dim=dim,
                                                 precision=precision, write_csv=False, batch_size=128)
        return evaluator(model)["spearman_cosine"]

    return run


@pytest.fixture(scope="module")
def st_on_our_vectors(minilm_path, minilm_cache):
    """all-MiniLM-L6-v2 in sentence-transformers whose forward pass returns embench's vectors: everything after
    it (truncation, normalisation, quantisation, unpacking, cosine, Spearman) is sentence-transformers' own."""
    import torch
    from sentence_transformers import SentenceTransformer

    engine = embench.encoding.engine.Engine(embench.load_model("all-MiniLM-L6-v2", device="cpu"), cache_dir=minilm_cache)
    st = SentenceTransformer(str(minilm_path), device="cpu")
    st.preprocess = lambda texts, **_: {"texts": list(texts)}
    st.forward = lambda features, **_: {"sentence_embedding": torch.from_numpy(engine.embed(features["texts"]))}
    return st, engine


@pytest.mark.slow
@pytest.mark.parametrize("dim,precision", AXES)
def test_scores_equal_sentence_transformers_evaluator_on_the_same_vectors(ours, st_on_our_vectors, st_evaluate,
                                                                          stsb, dim, precision):
    from scipy.stats import spearmanr
    from sentence_transformers.util import pairwise_cos_sim

    st, engine = st_on_our_vectors
    reference = st_evaluate(st, dim, precision)
    assert abs(ours[(dim, precision)].main_score - reference) < COSINE_WIDTH
    # the vectors themselves are sentence-transformers' to the bit (int8/uint8 calibrated on both sides, as it does)
    texts = stsb.left + stsb.right
    scored = VectorAxis(dim, precision).embedder(engine.embed, texts)
    theirs = st.encode(texts, precision=precision or "float32", truncate_dim=dim, normalize_embeddings=precision is not None)
    assert np.array_equal(scored(texts), scored_form(theirs, precision) if precision else theirs)
    # and with its float32 cosine, the score is its score
    f32 = spearmanr(stsb.gold, pairwise_cos_sim(scored(stsb.left), scored(stsb.right)).numpy())[0]
    assert f32 == pytest.approx(reference, abs=1e-12)


@pytest.mark.slow
def test_scores_equal_sentence_transformers_evaluator_on_the_real_model(ours, minilm_path, st_evaluate):
    """sentence-transformers' own model and evaluator, untouched but for one forward pass per distinct batch (int8
    and uint8 encode both sides in one call, so their batches are the same: the second reuses the first's outputs)."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(minilm_path), device="cpu")
    forward, outputs = st.forward, {}

    def once(features, **kwargs):
        key = features["input_ids"].numpy().tobytes() + str(tuple(features["input_ids"].shape)).encode()
        if key not in outputs:
            outputs[key] = forward(features, **kwargs)
        return dict(outputs[key])  # a copy: the evaluator's truncation replaces an entry of it

    st.forward = once
    for dim, precision in ((128, "int8"), (128, "uint8")):
        # the vectors differ from embench's by up to 1e-5 (padding to other batch lengths), which moves a few
        # values across a bucket boundary: the scores agree to the fifth decimal
        assert abs(ours[(dim, precision)].main_score - st_evaluate(st, dim, precision)) < COSINE_WIDTH
