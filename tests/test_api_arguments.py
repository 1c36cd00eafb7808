"""The Python API's arguments are checked as the CLI's options are: before any model loads or text is encoded, and
named as the function spells them (``ci_seed=-1``, not the command line's ``--ci-seed -1``: tests/test_python_spellings.py)."""

from __future__ import annotations

import numpy as np
import pytest

import embench
from embench.core.errors import EmbenchError


class NeverEncodes:
    fingerprint = "never"

    def encode(self, texts, **kw):
        raise AssertionError("encoded before the arguments were checked")


class Random:
    fingerprint = "random-vectors"

    def encode(self, texts, **kw):
        return np.random.default_rng(len(texts)).standard_normal((len(texts), 8)).astype(np.float32)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"suite": ["STS13"]}, r"suite must be a suite name such as 'sts-all', not list \['STS13'\]; give a list of tasks as tasks="),
    ({"tasks": []}, r"tasks=\[\] names no task; leave tasks out for the default suite"),
    ({"tasks": [13]}, r"tasks: 13 is not a name \(a int\)"),
    ({"tasks": 13}, r"tasks must be a name or a list of names, not int 13"),
    ({"batch_size": "32"}, r"batch_size must be a whole number, not str .32."),
    ({"batch_size": 2.5}, r"batch_size must be a whole number, not float 2.5"),
    ({"on_task": 5}, r"on_task must be a function \(or None\), not int 5"),
    ({"ci": 95, "ci_seed": -1}, r"ci_seed=-1: a whole number from 0 to 4294967295"),
    ({"overwrite": "no"}, r"overwrite must be True or False, not str 'no'"),  # a truthy string: it recomputed
    ({"progress": "no"}, r"progress must be True or False, not str 'no'"),
    ({"data": 5}, r"data must be a folder \(a path\), not int 5"),  # failed inside pathlib, unnamed
    ({"label": 5}, r"^label must be a name \(a non-empty string\), not int 5$"),  # a raw TypeError naming the rows
    ({"label": " "}, r"^label must be a name \(a non-empty string\), not str ' '$"),
])
def test_evaluate_refuses_a_bad_argument_before_encoding(data_root, tmp_path, kwargs, message):
    suite, data = kwargs.pop("suite", None), kwargs.pop("data", data_root)
    with pytest.raises(EmbenchError, match=message):
        embench.evaluate(NeverEncodes(), suite, data=data, results_dir=tmp_path, use_cache=False, **kwargs)


def test_one_task_name_as_a_string_is_that_task(data_root, tmp_path):
    """``tasks="STS13"`` was read letter by letter: unknown task 'S'."""
    ev = embench.evaluate(Random(), tasks="STS13", data=data_root, results_dir=tmp_path, use_cache=False, progress=False)
    assert [r.task for r in ev.records] == ["STS13"]
    assert [r.task for r in embench.results(tmp_path, task="STS13", model=ev.records[0].model)] == ["STS13"]
    with pytest.raises(EmbenchError, match="results folder .*nowhere does not exist"):
        embench.results(tmp_path / "nowhere")
    with pytest.raises(EmbenchError, match="task must be a name or a list of names, not int 13"):
        embench.results(tmp_path, task=13)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"layer": "3"}, r"^layer must be a whole number, not str '3'"),
    ({"layer": 1.5}, r"^layer must be a whole number, not float 1.5"),
    ({"max_length": "64"}, r"^max_length must be a whole number, not str '64'"),
    ({"name_or_path": " "}, r"the model name is empty: give a name, an alias or a folder"),
    ({"normalize": "no"}, r"normalize must be True or False, not str 'no'"),  # it normalised, and recorded "no"
    ({"compile": 1}, r"compile must be True or False, not int 1"),
])
def test_load_model_refuses_a_count_that_is_no_whole_number_or_an_empty_name(kwargs, message):
    with pytest.raises(EmbenchError, match=message):
        embench.load_model(kwargs.pop("name_or_path", "no-such-model-is-looked-up"), **kwargs)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"alpha": 1.5}, r"alpha=1.5: a significance level between 0 and 1"),
    ({"alpha": "0.05"}, r"alpha='0.05': a significance level between 0 and 1"),
    ({"test": "bootstrapp"}, r"test='bootstrapp': choose one of bootstrap, permutation, steiger"),
    ({"tasks": "MR", "test": "steiger"}, r"test='steiger' compares two correlations with one gold; MR is scored by accuracy"),
    ({"tasks": ["STS13", "MTEB:STS12"]}, r"MTEB:STS12: an MTEB task keeps no per-item outcomes"),
    ({"ci_seed": -3}, r"ci_seed=-3: a whole number from 0 to 4294967295"),
])
def test_compare_refuses_a_bad_argument_before_either_model_loads(data_root, tmp_path, kwargs, message):
    with pytest.raises(EmbenchError, match=message):
        embench.compare(NeverEncodes(), NeverEncodes(), data=data_root, results_dir=tmp_path, **kwargs)


def test_compare_refuses_a_missing_local_model_before_evaluating_the_other(data_root, tmp_path):
    with pytest.raises(EmbenchError, match=r"model '/no/such/model': the local folder '/no/such/model' does not exist"):
        embench.compare(NeverEncodes(), "/no/such/model", data=data_root, results_dir=tmp_path)


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: p.write_text("x"), r"model '\./afile': '.*afile' is a file, not a model folder or a \.gguf file"),
    (lambda p: p.mkdir(), r"model '\./afile': the folder '.*afile' is empty, not a model folder"),
])
def test_compare_refuses_a_model_path_of_the_wrong_kind_before_evaluating_the_other(data_root, tmp_path, monkeypatch,
                                                                                   make, message):
    """A file, or an empty folder, as model B was refused only after model A had been evaluated and stored."""
    monkeypatch.chdir(tmp_path)
    make(tmp_path / "afile")
    with pytest.raises(EmbenchError, match=message):
        embench.compare(NeverEncodes(), "./afile", data=data_root, results_dir=tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_a_results_folder_that_is_a_file_is_said_as_such(data_root, tmp_path):
    (tmp_path / "r").write_text("x")
    with pytest.raises(EmbenchError, match=r"results folder .*r is a file, not a folder; choose another results_dir"):
        embench.evaluate(NeverEncodes(), tasks="STS13", data=data_root, results_dir=tmp_path / "r", use_cache=False)


def test_analyses_refuse_a_file_as_their_folder_and_options_for_an_analysis_not_run(tmp_path):
    from embench.analysis.registry import run, run_many

    a_file = tmp_path / "h.py"
    a_file.write_text("x")
    with pytest.raises(EmbenchError, match=r"out .*h.py is a file; give a folder"):
        run("spectrum", ["no-such-model-is-loaded"], a_file)
    with pytest.raises(EmbenchError, match=r"out .*h.py is a file; give a folder"):
        run_many("spectrum", ["no-such-model-is-loaded"], a_file)  # one name as a string: that analysis
    with pytest.raises(EmbenchError, match=r"options given for knn, which run_many does not run \(spectrum\)"):
        run_many(["spectrum"], ["no-such-model-is-loaded"], tmp_path / "out", options={"knn": {"k": 5}})
    # an analysis' option given as a keyword was dropped unchecked (n_pairs=-5 ran): refused, with the right form
    with pytest.raises(EmbenchError, match=r"run_many\(\) got 'n_pairs', 'nonsense', which is no model option .*; "
                                           r"n_pairs is an option of spectrum.*: pass options=\{'spectrum': \{'n_pairs': ...\}\}"):
        run_many(["spectrum", "alignment-uniformity"], ["no-such-model-is-loaded"], tmp_path / "out", n_pairs=-5, nonsense=1)


def test_report_tables_takes_one_folder_model_or_task_as_a_string_and_checks_split(tmp_path):
    from embench.tasks.report_tables import report_tables

    with pytest.raises(EmbenchError, match=r"results folder .*nowhere does not exist"):
        report_tables(str(tmp_path / "nowhere"))  # was 'results folder t does not exist'
    with pytest.raises(EmbenchError, match=r"split='cols': choose one of tables, rows"):
        report_tables([tmp_path], split="cols")
    with pytest.raises(EmbenchError, match=r"no stored results for task\(s\) STS13 in"):  # one task, not S, T, S, 1, 3
        report_tables(tmp_path, tasks="STS13")


def test_a_manifest_that_is_a_folder_is_said_as_such(tmp_path):
    from embench.data.manifest import load_manifest

    with pytest.raises(EmbenchError, match=r"manifest .* is a folder, not a file"):
        load_manifest(tmp_path)


def test_a_pooler_that_returns_no_vector_per_text_is_named_at_the_first_batch(tiny_bert_dir):
    enc = embench.load_model(tiny_bert_dir, device="cpu")
    enc.pooler = lambda inp: inp.hidden_states[-1][:, 0, 0]  # (texts,): one number each, as the audit's plug-in did
    with pytest.raises(EmbenchError, match=r"^encode\(\): batch_size must be a whole number of at least 1, not float 1.5"):
        enc.encode(["a", "b", "c", "d"], batch_size=1.5)  # failed in a slice (or, for 3 texts, passed)
    with pytest.raises(EmbenchError, match=r"pooler 'cls' returned \(2,\); a pooler returns one vector per text, "
                                           r"a tensor of shape \(texts, dim\) = \(2, dim\)"):
        enc.encode(["a man plays", "rain"], use_cache=False)


def test_knn_and_labelled_sets_name_their_own_arguments():
    from embench.analysis.knn import knn_accuracy
    from embench.analysis.labelled import load_labelled

    x, y = np.random.default_rng(0).random((20, 4)), np.arange(20) % 2
    with pytest.raises(EmbenchError, match=r"knn_accuracy: k=0 is not allowed; k must be a whole number >= 1"):
        knn_accuracy(x, y, k=0)  # sklearn named it n_neighbors
    with pytest.raises(EmbenchError, match=r"test_size=1.5 is not allowed; test_size must be a fraction between 0 and 1"):
        knn_accuracy(x, y, test_size=1.5)
    for limit in (-5, 0):  # -5 failed in random.sample, 0 gave an empty set
        with pytest.raises(EmbenchError, match=rf"load_labelled: limit={limit} is not allowed"):
            load_labelled("banking77", limit=limit)


def test_statistics_helpers_refuse_values_outside_their_domain():
    from embench.stats import Metric
    from embench.stats.bootstrap import Scored
    from embench.stats.dependent_correlations import steiger_test
    from embench.stats.multiple_testing import holm
    from embench.stats.permutation import paired_permutation_test
    from embench.stats.seeds import seed_t_test

    with pytest.raises(ValueError, match=r"undefined for a perfect correlation"):
        steiger_test(1.0, 0.7, 0.6, 100)  # was math's 'math domain error'
    with pytest.raises(ValueError, match=r"r_AB=1.5 is no correlation"):
        steiger_test(0.5, 0.7, 1.5, 100)
    assert steiger_test(0.8, 0.8, 1.0, 100) == (0.0, 1.0)  # the same system twice
    with pytest.raises(ValueError, match=r"holm\(\) takes a list of p-values, not the text '0.05'"):
        holm("0.05")
    with pytest.raises(ValueError, match=r"p-values lie in \[0, 1\]; got \[1.5, -0.2\]"):
        holm([1.5, -0.2])
    assert holm([0.01, float("nan"), 0.04]) == pytest.approx([0.02, float("nan"), 0.04], nan_ok=True)
    a, b = Scored([np.arange(5.0)], [np.arange(5.0)]), Scored([np.arange(5.0)[::-1]], [np.ones(5)])
    with pytest.raises(ValueError, match="their gold scores"):
        paired_permutation_test(a, b, Metric(), 10)
    with pytest.raises(ValueError, match="resamples must be a positive integer, not 0"):
        paired_permutation_test(a, a, Metric(), 0)
    with pytest.raises(EmbenchError, match="needs the baseline's score"):
        seed_t_test([0.5, 0.6], [])


def test_one_text_is_a_batch_of_one_and_labels_are_a_sequence(tiny_bert_dir):
    """``encode_batch("hello")`` encoded five letters; ``knn_accuracy(x, "ab...")`` failed in len()."""
    from embench.analysis.knn import knn_accuracy

    enc = embench.load_model(tiny_bert_dir, device="cpu")
    one = enc.encode_batch("a man plays a guitar")
    assert one.shape == (1, enc.encode(["x"]).shape[1])
    assert np.allclose(one, enc.encode_batch(["a man plays a guitar"]), atol=1e-6)
    assert enc.encode_batch([]).shape == enc.encode([]).shape == (0, one.shape[1])  # was a tokenizer error; (0, 0)
    with pytest.raises(EmbenchError, match=r"kNN needs a sequence of labels, one per row of X; got labels of shape \(\)"):
        knn_accuracy(np.zeros((10, 3)), "abcdefghij")


def test_load_labelled_takes_one_split_as_a_string(data_root):
    from embench.analysis.labelled import load_labelled

    one = load_labelled("banking77", data_root, splits="test")  # was: has no split(s) ['t', 'e', 's', 't']
    assert len(one.texts) == len(load_labelled("banking77", data_root, splits=["test"]).texts) > 0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"reported": {"STS12": "abc"}}, r"reported: 'abc' \(for STS12\) is not a finite number"),
    ({"reported": {"STS1": 70.0}}, r"STS1"),
    ({"sample": 2.5}, r"sample must be a whole number of at least 1, not float 2.5"),
    ({"sample": 0}, r"sample must be a whole number of at least 1, not 0"),  # re-encoded nothing, reported no change
    ({"tolerance": -1}, r"tolerance must be a finite number of at least 0"),
    ({"truncate_dim": "64"}, r"truncate_dim='64': a truncation is a number of dimensions"),  # was dims 6 and 4
    ({"quantize": "int4"}, r"quantize='int4' is not a precision"),
])
def test_audit_refuses_a_bad_argument_before_the_model_loads(kwargs, message):
    from embench.audit.protocol import audit

    with pytest.raises(EmbenchError, match=message):
        audit("no-such-model-is-loaded", knobs=["truncate-dim"], tasks="STS12", **kwargs)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"knobs": ["correlation"], "truncate_dim": 16, "quantize": "int8"},
     r"^truncate_dim and quantize set the values of the truncate-dim and quantize knobs: add one of them to knobs"),
    ({"resamples": 10}, r"^resamples and ci_seed set how intervals are drawn: give ci=LEVEL \(e.g. ci=95\) too"),
])
def test_audit_refuses_options_it_would_not_use(kwargs, message):
    """``--truncate-dim 16 --quantize int8`` with neither knob in ``--knobs``, and ``--resamples`` without ``--ci``, were
    dropped in silence: the audit exited 0 with the full-length float scores and no interval (``run`` refuses the
    latter with this message)."""
    from embench.audit.protocol import audit

    with pytest.raises(EmbenchError, match=message):
        audit("no-such-model-is-loaded", tasks="STS12", **kwargs)


def test_a_batch_size_of_0_is_refused_before_any_model_loads(data_root, tmp_path, monkeypatch):
    """``batch_size=0`` was said by the engine only once the model had loaded: ``compare`` and ``evaluate`` after
    loading (a model, or model A), ``audit`` after loading the model and reading every task."""
    import embench.api
    from embench.audit.protocol import audit

    def loads(*args, **kwargs):
        raise AssertionError("a model loaded before the batch size was checked")

    monkeypatch.setattr(embench.api, "as_encoder", loads)
    for run in (lambda: embench.evaluate(NeverEncodes(), data=data_root, results_dir=tmp_path, batch_size=0),
                lambda: embench.compare(NeverEncodes(), NeverEncodes(), data=data_root, results_dir=tmp_path, batch_size=0),
                lambda: audit("no-such-model-is-loaded", tasks="STS12", batch_size=0)):
        with pytest.raises(EmbenchError, match=r"^batch_size must be at least 1, got 0"):
            run()


def test_numpy_bools_are_switches_under_numpy_2_too():
    """numpy 2 names np.bool_ 'bool', so evaluate(normalize=np.True_) was refused as 'not True or False'."""
    import numpy as np

    from embench.core.arguments import truth

    assert truth(np.True_, "normalize") is True and truth(np.False_, "normalize") is False
    with pytest.raises(EmbenchError, match="normalize must be True or False"):
        truth("no", "normalize")
