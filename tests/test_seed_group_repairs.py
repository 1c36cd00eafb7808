"""`embench train --seeds` on a group it left part-way: a seed folder removed, a seed added with an option at its
default, a seed's run interrupted. The seeds train through a stand-in Trainer (no model, no data): what is tested is
which seeds train and what the group and the refusals say."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

import embench.train.seeds as seeds_module
from embench.core.errors import EmbenchError
from embench.evaluation.seed_groups import read_seed_group
from embench.train import make_config
from embench.train.previous_run import clear_or_refuse
from embench.train.seeds import check_same_options, train_seeds
from embench.train.trainer import TrainResult


@pytest.fixture
def trained(monkeypatch) -> list[int]:
    """The seeds trained (in order) by a Trainer that makes ``best/`` and nothing else, after the check the real
    one makes first (``Trainer.setup``: another run's outputs in its folder are refused)."""
    seeds: list[int] = []

    class Trainer:
        def __init__(self, cfg):
            self.cfg = cfg

        def fit(self) -> TrainResult:
            out = Path(self.cfg.out)
            clear_or_refuse(out, self.cfg)
            (out / "best").mkdir(parents=True, exist_ok=True)
            seeds.append(self.cfg.seed)
            return TrainResult(out=out, best_dir=out / "best", best_step=2, best_score=0.5, initial_score=None, steps=2,
                               last_loss=None, metrics=out / "metrics.jsonl")

    monkeypatch.setattr(seeds_module, "Trainer", Trainer)
    return seeds


def _cfg(out: Path, **kw):
    return make_config(recipe="simcse-unsup", model="tiny-bert", data=["wiki.txt"], out=str(out), max_steps=2, **kw)


def test_a_seed_whose_folder_was_removed_is_trained_again_and_the_others_kept(tmp_path, trained, caplog):
    """``rm -rf OUT/seed-2`` then the same command: it stopped at "member folder(s) missing", nothing trained."""
    out = tmp_path / "sg"
    train_seeds(_cfg(out), [1, 2, 3])
    assert trained == [1, 2, 3]
    for s in (1, 2, 3):
        (out / f"seed-{s}" / "best" / "mark").write_text("kept")
    shutil.rmtree(out / "seed-2")
    with pytest.raises(EmbenchError, match=r"seed-2/best; run the train command of the group again with the same "
                                           r"--seeds \(or --seeds 2\) to train the missing seed\(s\) again"):
        read_seed_group(out)  # as `embench run` reads it: a mean over the others would pass for the group's
    with caplog.at_level(logging.WARNING, logger="embench.train.seeds"):
        members = train_seeds(_cfg(out, resume=True), [1, 2, 3])
    assert trained == [1, 2, 3, 2] and sorted(members) == [1, 2, 3]
    assert [r.getMessage() for r in caplog.records if "is gone" in r.getMessage()] == [
        f"{out / 'seeds.json'}: the folder of seed(s) 2 is gone ({out / 'seed-2' / 'best'}): left out of the group; "
        "--seeds with them trains them again"]  # once, not once per seed
    assert all((out / f"seed-{s}" / "best" / "mark").is_file() for s in (1, 3))
    assert json.loads((out / "seeds.json").read_text())["members"] == {str(s): f"seed-{s}/best" for s in (1, 2, 3)}
    shutil.rmtree(out / "seed-2")
    train_seeds(_cfg(out), [2])  # without --resume, and naming that seed alone
    assert trained == [1, 2, 3, 2, 2] and sorted(json.loads((out / "seeds.json").read_text())["members"]) == ["1", "2", "3"]


def test_a_seed_added_with_an_option_at_its_default_joins_the_group(tmp_path, trained):
    """``--set mlm_weight=0.0`` (the method's default) was refused as "other options": seeds.json keeps the options as
    given, and the group's seeds had left it out. Compared as trained (defaults filled in), it is the same recipe."""
    out = tmp_path / "sg"
    train_seeds(_cfg(out), [1])
    check_same_options(out, _cfg(out, method_options={"mlm_weight": 0.0}))
    with pytest.raises(EmbenchError, match=r"this run has mlm_weight=0.1 \(the group's seeds: 0.0\)\. Add seeds"):
        check_same_options(out, _cfg(out, method_options={"mlm_weight": 0.1}))  # another value: still refused, by name
    group = json.loads((out / "seeds.json").read_text())
    for key in ("eval_analyses", "select_initial"):
        del group["config"][key]
    (out / "seeds.json").write_text(json.dumps(group))  # an older seeds.json, without options added since
    check_same_options(out, _cfg(out))
    train_seeds(_cfg(out, method_options={"mlm_weight": 0.0}), [1, 2])
    assert trained == [1, 2]


def test_a_run_only_option_that_fails_resolving_is_no_other_option(tmp_path, trained, monkeypatch):
    """``--tensorboard`` without its package fails ``resolve``: the new config was then compared as written against
    the group's resolved one, and refused for eval_tasks=None (the group's: ['STSBenchmark-dev'])."""
    import importlib.util

    out = tmp_path / "sg"

    def cfg(**kw):
        return make_config(method="simcse", model="m", data=["wiki.txt"], out=str(out), **kw)

    train_seeds(cfg(), [1])
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorboard" else real(name, *a))
    check_same_options(out, cfg(tensorboard=True))
    with pytest.raises(EmbenchError, match=r"this run has lr=0\.5 \(the group's seeds: "):
        check_same_options(out, cfg(tensorboard=True, lr=0.5))


def test_an_interrupted_seed_is_refused_in_the_groups_words(tmp_path, trained):
    """It said "--out OUT/seed-2 holds a run ... start again with --overwrite": an --out the user never gave, and under
    --seeds --overwrite trains every seed again, not that one."""
    out = tmp_path / "si3"
    train_seeds(_cfg(out), [1])
    member = out / "seed-2"
    (member / "checkpoint-last").mkdir(parents=True)
    (member / "checkpoint-last" / "state.pt").write_bytes(b"")
    (member / "train_config.json").write_text("{}")
    with pytest.raises(EmbenchError) as e:
        train_seeds(_cfg(out), [1, 2, 3])
    assert str(e.value) == (f"--out {out}: seed 2 ({member}) holds an unfinished run (train_config.json, checkpoint-last/): "
                            "continue it with --resume (the same command; the finished seeds are kept); --overwrite "
                            "trains every seed of the group again, or train into another --out")
    assert trained == [1]
    (member / "checkpoint-last" / "state.pt").unlink()  # stopped before its first resume state
    with pytest.raises(EmbenchError, match="no resume checkpoint to continue from: --resume trains the seed again"):
        train_seeds(_cfg(out), [2])
