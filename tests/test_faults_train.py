"""Training under faults: a NaN keeps the last good checkpoint, --resume takes new optimiser options,
resume state never runs code."""

from __future__ import annotations

import hashlib
import io
import json
import re

import pytest
import torch

from embench.core.errors import EmbenchError
from embench.train import TrainingDivergedError, make_config, train
from embench.train.checkpoints import load_resume

pytestmark = pytest.mark.usefixtures("one_thread")


def _config(tiny_bert_dir, data_root, out, **kw):
    kw = {"lr": 1e-3, **kw}
    return make_config(method="crop", model=str(tiny_bert_dir), data=["20newsgroups"], data_root=str(data_root),
                       out=str(out), batch_size=8, max_length=32, max_examples=200, log_steps=1,
                       eval_steps=0, progress=False, **kw)


def _nan_at(monkeypatch, at_call: int):
    from embench.train.methods.crop import Crop

    real, calls = Crop.loss, {"n": 0}

    def loss(self, module, batch, dist):
        calls["n"] += 1
        value, logs = real(self, module, batch, dist)
        return (value * float("nan") if calls["n"] == at_call else value), logs

    monkeypatch.setattr(Crop, "loss", loss)


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_a_nan_stop_leaves_the_previous_good_checkpoint_untouched_and_names_it(tiny_bert_dir, data_root, tmp_path, monkeypatch):
    _nan_at(monkeypatch, at_call=4)  # a checkpoint after step 2; the loss of step 4 is NaN
    cfg = _config(tiny_bert_dir, data_root, tmp_path / "run", max_steps=10, save_steps=2)
    saved = tmp_path / "run" / "checkpoint-last"
    digests = []
    real_save = torch.save

    def spy(obj, f, *a, **k):  # the bytes of every resume state written (f: core.atomic's open temporary file)
        buffer = io.BytesIO()
        real_save(obj, buffer, *a, **k)
        f.write(buffer.getvalue())
        digests.append(hashlib.sha256(buffer.getvalue()).hexdigest())

    monkeypatch.setattr(torch, "save", spy)
    with pytest.raises(TrainingDivergedError, match=r"loss became nan at step 4.*checkpoint-last \(step 2\)") as e:
        train(cfg)
    assert "untouched" in str(e.value)
    assert json.loads((saved / "step.json").read_text())["step"] == 2
    assert len(digests) == 1 and _digest(saved / "state.pt") == digests[0]  # byte for byte the step-2 checkpoint


@pytest.mark.slow  # over 1 s: the fast tier stays under a minute
def test_resume_takes_a_new_learning_rate_and_says_so(tiny_bert_dir, data_root, tmp_path, caplog):
    out = tmp_path / "run"
    train(_config(tiny_bert_dir, data_root, out, max_steps=2, save_steps=2))
    import logging

    with caplog.at_level(logging.WARNING, logger="embench"):
        from embench.train.trainer import Trainer

        t = Trainer(_config(tiny_bert_dir, data_root, out, max_steps=4, save_steps=2, resume=True, lr=1e-5))
        t.setup()
    assert all(g["initial_lr"] == pytest.approx(1e-5) for g in t.optimizer.param_groups)
    assert t.scheduler.base_lrs == [pytest.approx(1e-5)] * len(t.scheduler.base_lrs)
    assert any("lr" in r.getMessage() and "1e-05" in r.getMessage() for r in caplog.records), caplog.text


class _Exploit:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os

        return (os.system, (f"touch '{self.marker}'",))


def test_resume_state_is_read_without_running_code(tmp_path):
    folder = tmp_path / "checkpoint-last"
    folder.mkdir()
    marker = tmp_path / "code-ran"
    torch.save({"model": {}, "step": 1, "x": _Exploit(marker)}, folder / "state.pt")
    with pytest.raises(EmbenchError, match="state.pt"):
        load_resume(folder)
    assert not marker.exists()


@pytest.mark.parametrize(("damage", "message"), [("missing", r"--resume: no checkpoint at .*state\.pt"),
                                                 ("truncated", r"--resume: cannot read .*state\.pt")])
def test_a_missing_or_truncated_resume_state_is_one_error_naming_it(tmp_path, damage, message):
    folder = tmp_path / "checkpoint-last"
    folder.mkdir()
    if damage == "truncated":  # a whole state, then cut as a kill -9 inside a copy would leave it
        torch.save({"model": {"w": torch.ones(64)}, "optimizer": {}, "scheduler": {}, "step": 1, "rng": {}}, folder / "state.pt")
        (folder / "state.pt").write_bytes((folder / "state.pt").read_bytes()[:300])
    with pytest.raises(EmbenchError, match=message):
        load_resume(folder)


def test_resume_with_another_batch_size_is_refused_naming_both_values():
    from embench.train.checkpoints import check_compatible

    saved = make_config(method="crop", batch_size=8).to_dict()
    with pytest.raises(EmbenchError, match="trained with batch_size=8, this run has 16"):
        check_compatible(saved, make_config(method="crop", batch_size=16))
    assert check_compatible(saved, make_config(method="crop", batch_size=8)) == []


@pytest.mark.parametrize(("option", "value", "message"), [
    ("lr", float("nan"), "--lr must be a finite number"),
    ("lr", 0.0, "--lr must be more than 0"),
    ("epochs", -1.0, "--epochs must be more than 0"),
    ("warmup_ratio", 1.5, "--set warmup_ratio must be at least 0.0 and at most 1.0"),
    ("grad_clip", float("inf"), "--set grad_clip must be a finite number"),
    ("eval_batch_size", 0, "--set eval_batch_size must be at least 1"),
    ("save_steps", 0, "--save-steps must be at least 1"),
    ("max_examples", -5, "--max-examples must be at least 1"),
    ("batch_size", 0, "--batch-size must be at least 2"),
    ("max_length", -1, "--max-length must be at least 4"),
])
def test_every_numeric_training_option_is_checked_before_anything_loads(option, value, message):
    from embench.train import resolve

    with pytest.raises(EmbenchError, match=message):
        resolve(make_config(method="crop", **{option: value}))


@pytest.mark.parametrize("method", ["crop", "sup-simcse", pytest.param("jtcse", marks=pytest.mark.slow)])  # jtcse: 1 s of imports
@pytest.mark.parametrize("tau", [1e-40, 0.0, 1e40])
def test_a_temperature_no_paper_would_use_is_refused_before_anything_loads(method, tau):
    """1e-40 made the first loss NaN and 1e40 a flat loss with no gradient: both stopped mid-run blaming --lr."""
    from embench.train import resolve

    with pytest.raises(EmbenchError, match=rf"--temperature must be at least 0.0001 and at most 10, got {re.escape(str(tau))} "
                                           r"\(InfoNCE divides the cosines by it; papers use 0.001 to 1, SimCSE 0.05\)"):
        resolve(make_config(method=method, temperature=tau))
    for kept in (0.001, 0.05, 1.0):  # SimCSE's Table D.1 from end to end
        assert resolve(make_config(method=method, temperature=kept)).method_options.temperature == kept


@pytest.mark.parametrize(("name", "text"), [("bad.yaml", "lr: 0.001\nmax_steps: x\n"), ("bad.toml", 'lr = 0.001\nmax_steps = "x"\n')],
                         ids=["yaml", "toml"])
def test_a_bad_value_in_a_config_file_is_named_by_the_file_and_its_key(tmp_path, name, text):
    """It was said as "--max-steps must be an integer, got 'x'": a flag the user never gave."""
    from embench.train import resolve

    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(EmbenchError, match=rf"^file='{re.escape(str(path))}': max_steps must be an integer, got 'x'$"):
        make_config(path, method="unsup-simcse", out=str(tmp_path / "t"))
    for line, said in (("lr: -1", "lr must be more than 0.0, got -1"),
                       ("method_options: {temperature: hot}", "temperature must be a number, got 'hot'"),
                       # out of range in the file: named by its key, not as --temperature (the method's own check)
                       ("temperature: 1.0e+40", r"temperature must be at least 0.0001 and at most 10, got 1e\+40 .*")):
        path = tmp_path / "other.yaml"
        path.write_text(line + "\n")
        with pytest.raises(EmbenchError, match=rf"^file='{re.escape(str(path))}': {said}$"):
            make_config(path, method="unsup-simcse")
    with pytest.raises(EmbenchError, match=r"^max_steps must be an integer, got 'x'$"):  # given as a keyword: the keyword
        resolve(make_config(method="unsup-simcse", max_steps="x"))


def test_set_only_names_exactly_the_options_train_has_no_flag_for():
    """Messages name an option as the command line spells it (train/config.option_flag): a flag where `embench
    train` has one, `--set name` where it does not. Checked against the command's own signature."""
    import dataclasses
    import inspect

    from embench.cli.commands.train import train
    from embench.train.config import SET_ONLY, TrainConfig

    params = set(inspect.signature(train).parameters)
    renamed = {"eval_tasks": "eval_task", "eval_analyses": "eval_analysis", "lora_targets": "lora_target",
               "data": "train_data", "data_root": "data", "compile": "compile_", "progress": "quiet"}
    no_flag = {f.name for f in dataclasses.fields(TrainConfig) if renamed.get(f.name, f.name) not in params}
    assert no_flag == SET_ONLY


def test_a_split_suffix_on_an_eval_task_other_than_stsb_is_refused():
    """``SICKRelatedness-dev`` scored SICK-R's test set, logged and kept as "-dev" (stsb_split reaches STS-B alone)."""
    from embench.train.callbacks import task_specs

    assert [s.options for s in task_specs(["STSBenchmark-dev", "STS-B-train", "sts-all"])] == [
        {"stsb_split": "dev"}, {"stsb_split": "train"}, {}]
    with pytest.raises(EmbenchError, match=r"--eval-task 'SICKRelatedness-dev': only STS-B has dev and train splits"):
        task_specs(["SICKRelatedness-dev"])
    with pytest.raises(EmbenchError, match=r"--eval-task 'sts-all-dev': a split suffix applies to STS-B alone"):
        task_specs(["sts-all-dev"])


def test_a_plugin_options_dataclass_without_string_annotations_is_type_checked_too():
    """The README's plug-in method has no ``from __future__ import annotations``: its ``float`` fields are types, not
    strings, and ``--set start_temperature=abc`` went unchecked into the loss (a TypeError traceback)."""
    import dataclasses

    from embench.train.resolution import typed

    def named(name):
        return f"--set {name}"

    options = dataclasses.make_dataclass("Options", [("start_temperature", float, 0.2), ("steps", int, 3)])
    typed(options, {"start_temperature": 1, "steps": 4}, named)
    with pytest.raises(EmbenchError, match=r"--set start_temperature must be a number, got 'abc'"):
        typed(options, {"start_temperature": "abc"}, named)
    with pytest.raises(EmbenchError, match=r"--set steps must be an integer, got 2.5"):
        typed(options, {"steps": 2.5}, named)


def _set(*items):
    """The options as `embench train --set` gives them to make_config."""
    from embench.train.config import parse_override

    return dict(parse_override(item) for item in items)


@pytest.mark.parametrize(("raw", "expected"), [("False", False), ("false", False), ("NO", False), ("off", False),
                                               ("0", False), ("True", True), ("yes", True), ("On", True), ("1", True)])
def test_a_yes_no_option_given_as_text_reads_the_word_not_its_length(raw, expected):
    """`--set select_initial=False` was the string 'False', true as any non-empty string: step 0 could be kept."""
    from embench.train import resolve

    cfg = resolve(make_config(method="sup-simcse", **_set(f"select_initial={raw}", f"unpadded={raw}",
                                                           f"fn_protect_hard={raw}", f'resume="{raw}"')))
    assert (cfg.select_initial, cfg.unpadded, cfg.method_options.fn_protect_hard, cfg.resume) == (expected,) * 4


@pytest.mark.parametrize(("item", "message"), [
    # as make_config's keywords; `embench train --set ...` says --set group_by_length, --eval-task (test_train_spellings)
    ("group_by_length=maybe", "group_by_length must be true or false (or yes/no, on/off, 1/0), got 'maybe'"),
    ("unpadded=2", "unpadded must be true or false (or yes/no, on/off, 1/0), got 2"),
    ('resume=""', "resume must be true or false (or yes/no, on/off, 1/0), got ''"),
    ("fn_protect_hard=maybe", "fn_protect_hard must be true or false (or yes/no, on/off, 1/0), got 'maybe'"),
    ("eval_tasks=[1]", "eval_tasks must be a name or a list of names, got [1]"),
    ("model_config=3", "model_config must be a mapping of name: value, got 3"),
    ("data_root=[1]", None),  # a text option keeps what was written: the folder named '[1]'
])
def test_a_value_its_option_cannot_take_is_refused_naming_the_option_and_value(item, message):
    from embench.train import resolve

    if message is None:
        assert resolve(make_config(method="sup-simcse", **_set(item))).data_root == "[1]"
        return
    with pytest.raises(EmbenchError, match=f"^{re.escape(message)}$"):
        resolve(make_config(method="sup-simcse", **_set(item)))


def test_text_options_keep_what_set_wrote_and_a_config_file_names_a_wrong_type(tmp_path):
    from embench.train import resolve

    cfg = resolve(make_config(method="unsup-simcse", **_set("revision=2024", "out=007", 'prompt="x {text}"')))
    assert (cfg.revision, cfg.out, cfg.prompt) == ("2024", "007", "x {text}")  # a tag, a folder; a JSON string read
    path = tmp_path / "c.yaml"
    for line, said in (("out: 5", "out must be text (a name or a path), got 5; in a config file, quote it"),
                       ("out:", "out needs a value, got none (null)"),
                       ("select_initial: maybe", "select_initial must be true or false (or yes/no, on/off, 1/0), got 'maybe'"),
                       ("eval_tasks: {STS12: 1}", "eval_tasks must be a name or a list of names, got {'STS12': 1}")):
        path.write_text(line + "\n")
        with pytest.raises(EmbenchError, match=f"^file='{re.escape(str(path))}': {re.escape(said)}$"):
            make_config(path, method="unsup-simcse")
    path.write_text('select_initial: "false"\ngroup_by_length: "No"\nresume: 0\n')  # quoted in YAML: still the word
    cfg = resolve(make_config(path, method="unsup-simcse"))
    assert (cfg.select_initial, cfg.group_by_length, cfg.resume) == (False, False, False)


def test_one_eval_task_or_analysis_given_as_text_is_a_list_of_one(tmp_path):
    """`eval_tasks: STSBenchmark-dev` in a config file was iterated letter by letter: "unknown task 'S'"."""
    from embench.train import resolve
    from embench.train.callbacks import task_specs

    path = tmp_path / "c.yaml"
    path.write_text("eval_tasks: STSBenchmark-dev\neval_steps: 5\n")
    assert make_config(path, method="unsup-simcse").eval_tasks == ["STSBenchmark-dev"]  # what --seeds records too
    cfg = resolve(make_config(method="unsup-simcse", **_set("eval_tasks=STS12", "eval_analyses=knn:20newsgroups")))
    assert (cfg.eval_tasks, cfg.eval_analyses) == (["STS12"], ["knn:20newsgroups"])
    assert [s.key for s in task_specs(cfg.eval_tasks)] == ["STS12"]
    assert resolve(make_config(method="unsup-simcse", data="a.txt", lora_targets="q_proj")).lora_targets == "q_proj"


def test_messages_name_the_flags_the_command_has():
    from embench.train.config import option_flag

    assert [option_flag(n) for n in ("eval_tasks", "eval_analyses", "lora_targets", "data", "data_root", "progress",
                                     "select_initial", "max_steps")] == [
        "--eval-task", "--eval-analysis", "--lora-target", "--train-data", "--data", "--set progress",
        "--set select_initial", "--max-steps"]


@pytest.mark.slow  # the CLI's imports
def test_show_refuses_a_bad_yes_no_value_and_shows_the_read_ones():
    from typer.testing import CliRunner

    from embench.cli.app import app

    base = ["train", "--method", "unsup-simcse", "-m", "m", "--show"]
    bad = CliRunner().invoke(app, [*base, "--set", "select_initial=maybe"])
    assert isinstance(bad.exception, EmbenchError) and "--set select_initial must be true or false" in str(bad.exception)
    shown = CliRunner().invoke(app, [*base, "--set", "select_initial=False", "--set", "eval_tasks=STS12"]).output
    assert "select_initial: false  # set here" in shown and "eval_tasks:  # set here\n- STS12\n" in shown
