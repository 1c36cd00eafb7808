"""A seed group's row in `embench run`: two groups whose folders share a last name, a group of one seed."""

from __future__ import annotations

import csv
import io

import pytest
from typer.testing import CliRunner

import embench
import embench.api
from embench.cli import app
from embench.evaluation.protocols import EvalProtocol
from embench.evaluation.results import Record
from embench.evaluation.seed_groups import write_seed_group

runner = CliRunner()


def _group(folder, seeds):
    """A seed group of empty seed folders: its seeds' scores come from the patched evaluate, not from a model."""
    members = {s: folder / f"seed-{s}" / "best" for s in seeds}
    for path in members.values():
        path.mkdir(parents=True)
    write_seed_group(folder, members, {"recipe": "simcse-unsup"})
    return folder


@pytest.fixture
def scored(env, monkeypatch):
    """``embench.evaluate`` as the CLI calls it, with each seed folder scored by ``scores[its path]`` (no encoding)."""
    real, scores = embench.api.evaluate, {}

    def evaluate(model, suite=None, label=None, **kw):
        if str(model) in scores:  # a seed: its record, named by its path as evaluate names a folder's
            return embench.Evaluation(records=[Record(task="STSBenchmark", display="STS-B", kind="sts", model=str(model),
                                                      main_score=scores[str(model)], scores={},
                                                      protocol=EvalProtocol().to_dict(), encoder={})])
        return real(model, suite, label=label, **kw)  # a group: the real seed-group path, each seed through here

    monkeypatch.setattr(embench.api, "evaluate", evaluate)
    return scores


def _rows(out: str) -> dict[str, list[str]]:
    return {r[1]: r[2:] for r in csv.reader(io.StringIO(out)) if r and r[0] == "scores"}


def test_two_groups_whose_folders_share_a_name_have_a_row_each(env, scored):
    """``run -m runs/bert/simcse -m runs/roberta/simcse``: both were keyed by ``simcse``, so the first group's seeds
    showed as loose rows and its mean was lost under the second's; each is now its own mean, named by the shortest
    ending of its folder that tells it apart (or its label)."""
    a = _group(env / "runs" / "bert" / "simcse", [1, 2, 3])
    b = _group(env / "runs" / "roberta" / "simcse", [1, 2, 3])
    for i, s in enumerate((1, 2, 3)):
        scored[str(a / f"seed-{s}" / "best")] = 0.10 + 0.01 * i
        scored[str(b / f"seed-{s}" / "best")] = 0.50 + 0.02 * i
    out = runner.invoke(app, ["run", "-m", str(a), "-m", str(b), "-t", "STS-B", "-q", "-f", "csv"])
    assert out.exit_code == 0, out.output
    assert _rows(out.stdout) == {"bert/simcse (mean of 3 seeds)": ["11.00", "1.00", "11.00", "1.00", ""],
                                 "roberta/simcse (mean of 3 seeds)": ["52.00", "2.00", "52.00", "2.00", ""]}
    labelled = runner.invoke(app, ["run", "-m", str(a), "-m", str(b), "--label", "A", "--label", "B", "-t", "STS-B",
                                   "-q", "-f", "csv"])
    assert labelled.exit_code == 0, labelled.output
    assert list(_rows(labelled.stdout)) == ["A (mean of 3 seeds)", "B (mean of 3 seeds)"]
    alone = runner.invoke(app, ["run", "-m", str(a), "-t", "STS-B", "-q", "-f", "csv"])  # one group: its folder's name
    assert list(_rows(alone.stdout)) == ["simcse (mean of 3 seeds)"]


def test_a_group_of_one_seed_is_one_seed_with_no_spread(env, scored):
    """It printed "si2 (mean of 1 seeds)" with a dangling "34.83 ±": the standard deviation of one score is none."""
    g = _group(env / "si2", [2])
    scored[str(g / "seed-2" / "best")] = 0.3483
    out = runner.invoke(app, ["run", "-m", str(g), "-t", "STS-B", "-q"])
    assert out.exit_code == 0, out.output
    assert "si2 (mean of 1 seed)" in out.stdout and "34.83" in out.stdout and "±" not in out.stdout


def test_compare_names_a_group_of_one_seed_in_the_singular():
    """compare's note said "A = si4 (1 seeds)"."""
    from embench.evaluation.seed_comparison import SeedSide, _describe

    assert _describe(SeedSide("si4", {"STS-B": [None]})) == "si4 (1 seed)"
    assert _describe(SeedSide("sg", {"STS-B": [None, None, None]})) == "sg (3 seeds)"


def test_compare_names_two_groups_that_share_a_folder_name_apart():
    """compare said "A = simcse, B = simcse" for runs/bert/simcse against runs/roberta/simcse: as run's rows, each
    group by the shortest ending of its folder that the other's lacks."""
    from types import SimpleNamespace

    from embench.evaluation.side_settings import named_sides

    side = SimpleNamespace(records=[SimpleNamespace(model="m", encoder={})])
    groups = [SimpleNamespace(key="/r/bert/simcse"), SimpleNamespace(key="/r/roberta/simcse")]
    assert named_sides((side, side), groups, ()) == ("bert/simcse", "roberta/simcse")
    assert named_sides((side, side), [groups[0], None], ()) == ("simcse", "m")


def test_seed_scores_takes_the_group_as_its_folder_or_as_the_table_names_it(tmp_path):
    """Groups became keyed by their resolved folder: seed_scores("simcse"), the name the table shows, was a KeyError."""
    folder = tmp_path / "runs" / "simcse"
    members = [str(folder / f"seed-{s}" / "best") for s in (1, 2)]
    records = [Record(task="STSBenchmark", display="STS-B", kind="sts", model=m, main_score=v, scores={},
                      protocol=EvalProtocol().to_dict(), encoder={}) for m, v in zip(members, (0.25, 0.75), strict=True)]
    ev = embench.Evaluation(records=records, seed_groups={str(folder.resolve()): members})
    expected = {"STS-B": [0.25, 0.75], "Avg.": [0.25, 0.75]}
    assert ev.seed_scores("simcse") == ev.seed_scores(str(folder)) == ev.seed_scores(str(folder.resolve())) == expected
