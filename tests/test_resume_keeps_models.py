"""--resume with no resume state starts afresh only where nothing is worth keeping: a finished run whose
checkpoint-last/ was deleted (footprint.describe suggests it) keeps its best/ and series, and is refused as before;
--seeds does not clear such a seed either, and a finished seed is in the group before its resume state goes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from embench.core.errors import EmbenchError
from embench.train import make_config


def _finished_run(out: Path, *, best: str | None = "best", series: bool = True) -> None:
    """What a finished run leaves once its checkpoint-last/ is deleted: config, metrics, evals, its kept models."""
    out.mkdir(parents=True)
    (out / "train_config.json").write_text(json.dumps({"method": "unsup-simcse", "model": "m",
                                                       "resolved_total_steps": 2}))
    (out / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in (1, 2)))
    (out / "evals" / "step-000002").mkdir(parents=True)
    models = ([out / best] if best else []) + ([out / "checkpoints" / "step-000002"] if series else [])
    for folder in models:
        folder.mkdir(parents=True)
        (folder / "embench_training.json").write_text("{}")
        (folder / "README.md").write_text("card")


def _everything(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*"))


@pytest.mark.parametrize("best,series", [("best", True), ("best", False), ("best.old", False), (None, True)])
def test_resume_of_a_run_that_kept_a_model_is_refused_and_removes_nothing(tmp_path, best, series):
    from embench.train.previous_run import clear_or_refuse, resume_or_start_afresh

    out = tmp_path / "run"
    _finished_run(out, best=best, series=series)
    before = _everything(out)
    cfg = make_config(method="unsup-simcse", model="m", out=str(out), resume=True)
    with pytest.raises(EmbenchError, match=r"--resume: no checkpoint at .*checkpoint-last/state.pt to continue from, "
                                           r"and .* holds a run of unsup-simcse \(2 steps\) on m that finished or has "
                                           r"checkpoints \(.*/\).*--overwrite trains it again"):
        resume_or_start_afresh(out, cfg)
    assert _everything(out) == before
    # --resume --overwrite says removing them is meant: the run starts afresh, clearing them
    fresh = resume_or_start_afresh(out, make_config(method="unsup-simcse", model="m", out=str(out), resume=True,
                                                    overwrite=True), say=False)
    assert (fresh.resume, fresh.overwrite) == (False, True)
    clear_or_refuse(out, fresh)
    assert not (out / "checkpoints").exists() and not (out / "best").exists()


@pytest.mark.slow  # the trainer's imports
def test_a_seed_that_kept_a_model_is_not_cleared_and_is_grouped_before_its_resume_state_goes(tmp_path, monkeypatch):
    import embench.train.seeds as seeds
    from embench.train.footprint import Footprint

    out = tmp_path / "group"
    _finished_run(out / "seed-1")  # trained, but not in seeds.json, and its checkpoint-last/ gone
    before = _everything(out)
    started = []

    class Stub:
        def __init__(self, cfg):
            started.append(cfg)

        def fit(self):
            member = Path(started[-1].out)
            (member / "best").mkdir(parents=True, exist_ok=True)
            (member / "checkpoint-last").mkdir(exist_ok=True)
            return seeds.TrainResult(member, member / "best", 2, None, None, 2, 1.0, member / "metrics.jsonl",
                                     footprint=Footprint(0, None, member))

    monkeypatch.setattr(seeds, "Trainer", Stub)
    cfg = make_config(method="unsup-simcse", model="m", out=str(out), resume=True)
    with pytest.raises(EmbenchError, match=r"seed-1 holds .* that finished or has checkpoints .*remove .*seed-1 to "
                                           r"train seed 1 again"):
        seeds.train_seed(cfg, 1)
    assert not started and _everything(out) == before
    # a seed stopped before its first checkpoint (nothing kept) still starts afresh
    (out / "seed-2").mkdir()
    (out / "seed-2" / "metrics.jsonl").write_text("{}\n")

    def stopped(member):  # a stop right after the seed was trained
        raise KeyboardInterrupt

    monkeypatch.setattr(seeds, "drop_resume_state", stopped)
    with pytest.raises(KeyboardInterrupt):
        seeds.train_seed(cfg, 2)
    assert (started[-1].resume, started[-1].overwrite) == (False, True)
    assert list(seeds.finished_seeds(out)) == [2]  # kept in the group: a rerun skips it rather than meeting it


def test_ctrl_c_hint_sends_a_run_that_kept_a_model_to_overwrite_not_resume(tmp_path):
    from embench.cli.commands.train import _interrupted_hint

    out = tmp_path / "run"
    _finished_run(out, series=False)  # an evaluation exported best/ before the first resume state was written
    cfg = make_config(method="unsup-simcse", model="m", out=str(out))
    hint = _interrupted_hint(cfg, None, str)
    assert "nothing to continue from; the same command with --overwrite (removing the checkpoints it kept)" in hint
    assert "--resume" not in hint
