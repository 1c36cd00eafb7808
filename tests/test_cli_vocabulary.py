"""One vocabulary: the test walks every command of the CLI and checks that an option means the same thing
wherever it appears, and that every help text is shown as written."""

from __future__ import annotations

from collections import defaultdict

import pytest
import typer
from typer.testing import CliRunner

from embench.cli.app import app

# Options that legitimately differ in one command, with why.
EXCEPTIONS = {
    ("train", "--batch-size"): "the global training batch, not an encoding batch",
    ("report", "--results-dir"): "a report reads several results folders; the others write into one",
    ("grid", "--results-dir"): "the one folder every job of the grid writes into",
    ("generate triplets", "--batch-size"): "premises an LLM decodes together (x2 hypotheses x2 streams), not texts encoded",
    ("generate curate", "--batch-size"): "scoring prompts an LLM decodes together, not texts encoded",
    ("generate triplets", "--temperature"): "the sampling temperature of decoding, not InfoNCE's",
}


def commands():
    """(command path, click command) of every command and subcommand."""
    def walk(cmd, path):
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            yield from walk(sub, [*path, name])
        if path:
            yield " ".join(path), cmd

    return list(walk(typer.main.get_command(app), []))


def options():
    """(command, option) pairs of the whole CLI."""
    return [(path, p) for path, cmd in commands() for p in cmd.params if p.param_type_name == "option"]


def test_a_short_flag_names_the_same_option_everywhere():
    longs_of = defaultdict(set)
    for _path, p in options():
        for short in (o for o in p.opts if not o.startswith("--")):
            longs_of[short].add(next(o for o in p.opts if o.startswith("--")))
    assert {s: ls for s, ls in longs_of.items() if len(ls) > 1} == {}
    assert longs_of["-m"] == {"--model"} and longs_of["-t"] == {"--task"} and longs_of["-q"] == {"--quiet"}


def test_an_option_has_one_shape_everywhere():
    """Repeatable or not, flag or not, and one default batch size, wherever the option appears."""
    shapes = defaultdict(dict)
    for path, p in options():
        long = next(o for o in p.opts if o.startswith("--"))
        if (path, long) in EXCEPTIONS:
            continue
        default = p.default if long == "--batch-size" else None
        shapes[long][path] = (p.multiple, p.is_flag, default)
    mixed = {o: by for o, by in shapes.items() if len(set(by.values())) > 1}
    assert mixed == {}
    assert {shape[0] for shape in shapes["--task"].values()} == {True}  # -t repeatable everywhere
    assert {shape[0] for shape in shapes["--model"].values()} == {True}


def test_the_data_root_is_data_in_every_command():
    for path, p in options():
        help_ = (p.help or "").lower()
        if help_.startswith("data root"):
            assert "--data" in p.opts, f"{path}: the data root is spelled {p.opts}"
        assert "--data-root" not in p.opts, path
        if "--data" in p.opts:
            assert help_.startswith("data root"), f"{path} --data means something else: {p.help}"


@pytest.mark.parametrize("path", [p for p, _ in commands()])
def test_help_shows_every_option_as_written(path):
    """Brackets in help texts are not read as markup, flags show no '<bool>', required options are marked."""
    cmd = dict(commands())[path]
    out = CliRunner().invoke(app, [*path.split(), "--help"], env={"COLUMNS": "200"}).output
    flat = "".join(out.split())
    assert "<bool>" not in out
    for p in cmd.params:
        if p.param_type_name == "option" and p.help and not p.hidden:
            assert "".join(p.help.split()) in flat, f"{path} {p.opts}: help not shown as written"
        if p.param_type_name == "option" and p.required:
            assert "[required]" in out


def test_an_unknown_option_gets_the_nearest_of_that_command():
    r = CliRunner().invoke(app, ["run", "--data-dir", "x"])
    assert r.exit_code != 0 and "--data" in r.output


def test_knobs_accept_the_flag_spelling_and_suggest_the_nearest():
    from embench.audit.knobs import knob_name
    from embench.audit.protocol import audit
    from embench.core.errors import EmbenchError

    assert knob_name("sick-split") == knob_name("sick_split") == "sick_split"
    with pytest.raises(EmbenchError, match="did you mean 'batch-size'"):
        knob_name("batchsize")
    # the Python API takes both spellings too (it refused "truncate-dim", which the README and the CLI use),
    # and one knob as a string is that knob; both said before any model loads
    with pytest.raises(EmbenchError, match="unknown knob 'batchsize'"):
        audit("no-such-model-is-loaded", knobs=["truncate-dim", "batchsize"])
    with pytest.raises(EmbenchError, match="unknown knob 'quantise'; did you mean 'quantize'"):
        audit("no-such-model-is-loaded", knobs="quantise")


def test_train_data_given_to_the_data_root_option_is_explained(tmp_path):
    from embench.core.errors import EmbenchError

    r = CliRunner().invoke(app, ["train", "--method", "crop", "--data", "20newsgroups", "-o", str(tmp_path / "o")])
    assert isinstance(r.exception, EmbenchError) and "--train-data 20newsgroups" in str(r.exception)


def test_train_takes_model_as_every_command_does_and_refuses_a_second_one(capsys, monkeypatch):
    import sys

    from embench.cli import main

    monkeypatch.setattr(sys, "argv", ["embench", "train", "--recipe", "simcse-unsup", "-m", "a", "-m", "b", "--show"])
    with pytest.raises(SystemExit) as exit_:
        main()
    err = " ".join(capsys.readouterr().err.split())
    assert exit_.value.code == 2 and "--model was given 2 times (a, b): a training run starts from one model" in err


def test_every_seed_option_takes_numpy_s_range_and_refuses_the_rest_as_a_usage_error():
    seeds = [(path, p) for path, p in options() if {"--seed", "--ci-seed"} & set(p.opts)]
    assert len(seeds) >= 6
    for path, p in seeds:
        assert (p.min, p.max) == (0, 2**32 - 1), (path, p.opts)
    for args in (["run", "-m", "x", "-t", "STS16", "--seed", "-1"], ["compare", "-m", "a", "-m", "b", "--ci-seed", "-1"],
                 ["train", "--recipe", "simcse-unsup", "--seed", str(2**32), "--show"]):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 2 and "Invalid value for '--" in res.output, (args, res.output)
