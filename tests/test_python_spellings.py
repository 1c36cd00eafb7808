"""The Python API's errors name its parameters; the command line's name its options.

``embench.evaluate(model, ci="abc")`` said ``--ci 'abc': ...``, ``resamples=0`` said ``--resamples 0``, ``layer=99``
said ``--layer 99``: the checks are the command line's, deep in the layers. A public function now rewrites the option
words of its errors into its own parameters (embench/core/spellings.py), and the command line keeps its own.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import embench
from embench.cli import app
from embench.core.boundary import python_api
from embench.core.errors import EmbenchError, MissingDataError, UndefinedScoreError, UnknownNameError
from embench.core.spellings import PYTHON_NAMES, WORDS, respell


class NeverEncodes:
    fingerprint = "never"

    def encode(self, texts, **kw):
        raise AssertionError("encoded before the arguments were checked")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"ci": "abc"}, r"^ci='abc': a confidence level"),
    ({"ci": 95, "resamples": 0}, r"^resamples=0: the number of bootstrap resamples must be a positive integer$"),
    ({"ci": 95, "ci_seed": -1}, r"^ci_seed=-1: a whole number from 0 to 4294967295$"),
    ({"resamples": 100}, r"^resamples and ci_seed set how intervals are drawn: give ci=LEVEL \(e\.g\. ci=95\) too$"),
    ({"sick_split": "x"}, r"^invalid value 'x' for option sick_split; choose one of: test, full$"),
    ({"scoring": "regressor", "sick_split": "full"}, r"^scoring='regressor' trains on the train split and selects on "
                                                     r"dev, so it needs sick_split='test' and stsb_split='test'$"),
    ({"truncate_dim": 0}, r"^truncate_dim=0: a truncation is a number of dimensions, 1 or more$"),
    ({"quantize": "int4"}, r"^quantize='int4' is not a precision"),
    ({"batch_size": 0}, r"^batch_size must be at least 1, got 0$"),
    ({"data": "/no/such/root"}, r"\(data, else EMBENCH_DATA\); point data or EMBENCH_DATA at a data root, or make "
                                r"one with `embench data download`$"),  # a command to type is kept as it is
])
def test_evaluate_names_its_parameters(data_root, tmp_path, kwargs, message):
    kwargs.setdefault("data", data_root)
    with pytest.raises(EmbenchError, match=message):
        embench.evaluate(NeverEncodes(), tasks=["STS13"], results_dir=tmp_path, use_cache=False, **kwargs)


def test_a_model_option_is_named_as_load_model_and_evaluate_take_it():
    with pytest.raises(EmbenchError, match=r"^layer must be a whole number, not str '3'$"):
        embench.load_model("no-such-model-is-looked-up", layer="3")
    with pytest.raises(EmbenchError, match=r"^invalid dtype='fp8'; choose one of: fp32, bf16, fp16$"):
        embench.evaluate("no-such-model-is-looked-up", tasks=["STS13"], dtype="fp8")
    with pytest.raises(EmbenchError, match=r"^invalid value 'median' for option aggregation;"):
        embench.EvalProtocol(aggregation="median")


def test_compare_names_test_and_alpha(data_root, tmp_path):
    with pytest.raises(EmbenchError, match=r"^test='steiger' compares two correlations with one gold; MR is scored by "
                                           r"accuracy: use test='bootstrap' or permutation$"):
        embench.compare(NeverEncodes(), NeverEncodes(), tasks=["MR"], test="steiger", data=data_root, results_dir=tmp_path)
    with pytest.raises(EmbenchError, match=r"^alpha=1\.5: a significance level between 0 and 1"):
        embench.compare(NeverEncodes(), NeverEncodes(), alpha=1.5, data=data_root, results_dir=tmp_path)
    with pytest.raises(EmbenchError, match=r"give one truncate_dim and one quantize \(run it once per dimension"):
        embench.compare(NeverEncodes(), NeverEncodes(), truncate_dim=[128, 64])


def test_report_tables_says_models_tasks_and_split(tmp_path):
    from embench.evaluation.results import Record, ResultStore, record_key
    from embench.report.paper import ProtocolMixError

    store = ResultStore(tmp_path / "results")
    for model, correlation in (("m1", "spearman"), ("m2", "pearson")):
        protocol = embench.EvalProtocol(correlation=correlation).to_dict()
        encoder = {"fingerprint": model, "pooling": "mean", "layer": 6, "max_length": 256, "dtype": "fp32", "normalize": True}
        store.save(Record(task="STS12", display="STS12", kind="sts", model=model, main_score=0.5, scores={},
                          protocol=protocol, encoder=encoder, key=record_key("STS12", encoder, protocol)))
    with pytest.raises(ProtocolMixError, match=r"choose one with models/tasks, or pass split='tables' \(a table per "
                                               r"protocol\) or split='rows' \(a row per model and protocol\)$"):
        embench.report_tables([store.root])
    with pytest.raises(EmbenchError, match=r"^split='cols': choose one of tables, rows"):
        embench.report_tables([store.root], split="cols")


@pytest.mark.slow
def test_the_command_line_keeps_its_options_and_the_api_is_itself_again_after_it(env):
    r = CliRunner().invoke(app, ["run", "-m", "no-such-model-is-loaded", "-t", "STS13", "--ci", "150"])
    assert isinstance(r.exception, EmbenchError) and str(r.exception).startswith("--ci 150.0: a confidence level"), r.output
    r = CliRunner().invoke(app, ["run", "-m", "no-such-model-is-loaded", "-t", "STS13", "--sick-split", "full",
                                 "--scoring", "regressor"])
    assert "needs --sick-split test and --stsb-split test" in str(r.exception)
    with pytest.raises(EmbenchError, match=r"^ci=150: a confidence level"):  # in the same process, after a command
        embench.evaluate(NeverEncodes(), tasks=["STS13"], ci=150)


def test_the_error_is_the_same_object_its_class_and_attributes_kept():
    partial = object()

    @python_api("evaluate")
    def fails(error):
        raise error

    with pytest.raises(UndefinedScoreError) as caught:
        fails(UndefinedScoreError("STS13: undefined under --aggregation all", partial))
    assert caught.value.evaluation is partial and str(caught.value) == "STS13: undefined under aggregation='all'"
    with pytest.raises(MissingDataError) as missing:  # a FileNotFoundError whose __str__ is its own
        fails(MissingDataError("/d/x.txt", "STS12", "/d"))
    assert missing.value.task == "STS12" and str(missing.value).endswith(
        "Get it with `embench data download --task STS12` or point data / EMBENCH_DATA at a folder that has it.")
    with pytest.raises(UnknownNameError) as unknown:
        fails(UnknownNameError("pooler", "--layer", ["cls"], []))  # a name given, not an option: its quote keeps it
    assert str(unknown.value) == "unknown pooler '--layer'. Known: cls" and isinstance(unknown.value, KeyError)


def test_only_the_options_a_function_takes_are_rewritten():
    assert respell("--task and --split 'x'", PYTHON_NAMES["report_tables"]) == "tasks and split='x'"
    assert respell("--task and --split 'x'", PYTHON_NAMES["results"]) == "task and --split 'x'"  # results has no split
    assert respell("--layers 3, --layer 3", PYTHON_NAMES["load_model"]) == "--layers 3, layer=3"  # not a word's prefix
    assert respell("--model all-MiniLM-L6-v2 --adapter ./a/b.", PYTHON_NAMES["load_model"]) == (
        "name_or_path='all-MiniLM-L6-v2' adapter='./a/b'.")
    assert respell("--no-cache, --device all: x", PYTHON_NAMES["evaluate"]) == "use_cache=False, device='all': x"
    # a task file changed since it was read (tasks/task_file/tasks.py) said "(--task-file, or task_files= in Python)"
    assert respell("give it again (--task-file) to use it", PYTHON_NAMES["evaluate"]) == "give it again (task_files) to use it"


def test_the_words_an_option_takes_are_its_choices():
    from embench.encoding.quantize import PRECISIONS
    from embench.evaluation.comparison import TESTS
    from embench.evaluation.protocols import CHOICES
    from embench.models.bidirectional import MODES
    from embench.models.encoder import DTYPES
    from embench.report.paper import SPLITS

    assert {k: WORDS[k] for k in CHOICES} == {k: c.values for k, c in CHOICES.items()}
    assert (WORDS["split"], WORDS["test"], WORDS["quantize"], WORDS["dtype"], WORDS["bidirectional_mode"]) == (
        SPLITS, TESTS, PRECISIONS, tuple(DTYPES), tuple(MODES))
