"""Plug-ins: a package of its own adds a method, pooler, task, analysis, family, recipe or suite through entry
points; it is read on first need, checked against what its registry holds, and a broken one names itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

from embench.core.plugins import PluginError
from embench.core.registry import Registry

# -- a plug-in package: its modules and its .dist-info, as pip writes them ---------------------------------
METHOD = '''
"""An InfoNCE whose temperature anneals linearly over the run: a method in a package of its own."""
from dataclasses import dataclass

from embench.train import Batch, Method
from embench.train.losses import info_nce


@dataclass
class AnnealOptions:
    start_temperature: float = 0.1
    end_temperature: float = 0.02


class AnnealedInfoNCE(Method):
    """toy: InfoNCE of two dropout views, the temperature annealed from start to end"""

    Options = AnnealOptions
    defaults = {"pooling": "mean", "lr": 1e-3, "batch_size": 8, "max_length": 24}

    def batch(self, examples, indices, rng):
        texts = [examples[i] for i in indices]
        return Batch({"anchor": texts, "positive": list(texts)})

    def objective(self, outputs, batch, dist):
        o = self.options
        tau = o.start_temperature + (o.end_temperature - o.start_temperature) * self.step / max(1, self.total_steps - 1)
        r = outputs.reps
        return info_nce(r["anchor"], r["positive"], tau), {"temperature": tau, "method_step": self.step}


class NotAMethod:
    """A plug-in object that is no Method: refused by the registry."""
'''
POOLER = '''
import torch


def pool_min(x):
    """element-wise minimum over real tokens of the chosen layer"""
    states = x.hidden_states[x.layer]
    return states.masked_fill(x.attention_mask.unsqueeze(-1) == 0, torch.finfo(states.dtype).max).min(1).values
'''
ENTRY_POINTS = {
    "embench.methods": {"annealed-infonce": "embench_anneal.method:AnnealedInfoNCE"},
    "embench.poolers": {"min": "embench_anneal.pooling:pool_min"},
}
BROKEN_ENTRY_POINTS = {
    "embench.methods": {"broken": "embench_broken.missing:Method", "not-a-method": "embench_anneal.method:NotAMethod",
                        "crop": "embench_anneal.method:AnnealedInfoNCE"},
}


def write_distribution(root: Path, name: str, entry_points: dict[str, dict[str, str]], modules: dict[str, str],
                       summary: str = "") -> Path:
    """``modules`` (dotted name -> source) and a ``NAME-0.1.dist-info`` with ``entry_points.txt`` under ``root``:
    what ``pip install --target root`` leaves (1 ms here against 3 s for pip itself)."""
    for module, source in modules.items():
        path = root.joinpath(*module.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(root).parents:
            if parent != Path("."):
                (root / parent / "__init__.py").touch()
        path.write_text(textwrap.dedent(source))
    info = root / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\nSummary: {summary}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{n} = {v}\n" for n, v in entries.items()) + "\n" for group, entries in entry_points.items()))
    return root


@pytest.fixture(autouse=True)
def _fresh_plugin_modules():
    """Each test imports its own copy of the plug-in package (from its own folder)."""
    def forget():
        for name in [m for m in sys.modules if m.split(".")[0] in ("embench_anneal", "embench_broken")]:
            del sys.modules[name]

    forget()
    yield
    forget()


@pytest.fixture()
def plugin_path(tmp_path, monkeypatch) -> Path:
    root = write_distribution(tmp_path / "site", "embench-anneal", ENTRY_POINTS,
                              {"embench_anneal.method": METHOD, "embench_anneal.pooling": POOLER},
                              summary="an annealed InfoNCE and a min pooler")
    monkeypatch.syspath_prepend(str(root))
    return root


def _methods() -> Registry:
    """A registry declared as METHODS is (its group and check), with one built-in entry, fresh for each test."""
    from embench.train.methods import METHODS

    registry = Registry("training method", plugins="embench.methods", expects=METHODS.expects)
    registry.add("crop", "embench.train.methods.crop:Crop", description="built in")
    return registry


# -- in-process: the registry's behaviour --------------------------------------------------------------------
def test_a_plugin_method_is_listed_with_its_distribution_and_loads_as_a_method_subclass(plugin_path):
    from embench.train import Method

    methods = _methods()
    assert methods.names() == ["crop", "annealed-infonce"]
    assert methods.description("annealed-infonce") == ("an annealed InfoNCE and a min pooler [plug-in: embench-anneal 0.1, "
                                                       "embench_anneal.method:AnnealedInfoNCE]")
    cls = methods.get("Annealed-InfoNCE")
    assert issubclass(cls, Method) and cls.__name__ == "AnnealedInfoNCE"
    assert methods.plugin("annealed-infonce").distribution == "embench-anneal 0.1" and methods.plugin("crop") is None


def test_entry_points_are_read_on_the_first_unknown_name_or_listing_never_for_a_built_in_name(plugin_path, monkeypatch):
    import embench.core.registry as registry_module

    calls = []
    real = registry_module.discover
    monkeypatch.setattr(registry_module, "discover", lambda group: calls.append(group) or real(group))
    methods = _methods()
    assert methods.canonical("CROP") == "crop" and "crop" in methods and calls == []
    assert methods.canonical("annealed-infonce") == "annealed-infonce" and calls == ["embench.methods"]
    methods.names(), methods.get("annealed-infonce")
    assert calls == ["embench.methods"]  # once per registry


@pytest.mark.filterwarnings("ignore:training method plug-in 'crop'")
def test_a_wrong_object_is_refused_naming_the_distribution_and_entry_point(tmp_path, monkeypatch):
    write_distribution(tmp_path, "embench-broken", BROKEN_ENTRY_POINTS, {"embench_anneal.method": METHOD})
    monkeypatch.syspath_prepend(str(tmp_path))
    methods = _methods()
    with pytest.raises(PluginError) as e:
        methods.get("not-a-method")
    assert str(e.value).startswith("training method plug-in 'not-a-method' is refused: it is the class "
                                   "embench_anneal.method.NotAMethod, not a subclass of embench.train.Method")
    assert "entry point not-a-method = 'embench_anneal.method:NotAMethod'" in str(e.value)
    assert "distribution embench-broken 0.1" in str(e.value)


def test_a_broken_plugin_names_itself_and_the_built_in_names_still_work(tmp_path, monkeypatch):
    write_distribution(tmp_path, "embench-broken", BROKEN_ENTRY_POINTS, {"embench_anneal.method": METHOD})
    monkeypatch.syspath_prepend(str(tmp_path))
    methods = _methods()
    with pytest.warns(UserWarning, match="training method plug-in 'crop' of embench-broken 0.1 is ignored: embench "
                                         "already registers 'crop'"):
        names = methods.names()
    assert names == ["crop", "broken", "not-a-method"]
    with pytest.raises(PluginError, match=r"plug-in 'broken' cannot be loaded \(ModuleNotFoundError: No module named "
                                          r"'embench_broken'\); entry point broken = 'embench_broken.missing:Method'"):
        methods.get("broken")
    assert methods.get("crop").__name__ == "Crop"  # the built-in, not the plug-in of the same name
    assert "[plug-in: embench-broken 0.1" in methods.description("broken")  # listing needs no import


@pytest.mark.filterwarnings("ignore:training method plug-in 'crop'")
def test_going_over_every_entry_leaves_a_broken_plugin_out_with_one_warning(tmp_path, monkeypatch):
    """``data check``, a report without --suite, ``analyze list`` and train's unknown-option hint go over every entry:
    a broken plug-in they did not name stopped them (README: it stops only the command that uses it)."""
    write_distribution(tmp_path, "embench-broken", BROKEN_ENTRY_POINTS, {"embench_anneal.method": METHOD})
    monkeypatch.syspath_prepend(str(tmp_path))
    methods = _methods()
    with pytest.warns(UserWarning) as seen:
        loaded = dict(methods.items())
    assert list(loaded) == ["crop"] and loaded["crop"].__name__ == "Crop"
    assert [str(w.message).split(" (")[0] for w in seen if "left out" in str(w.message)] == [
        "training method plug-in 'broken' cannot be loaded", "training method plug-in 'not-a-method' is refused: it is "
        "the class embench_anneal.method.NotAMethod, not a subclass of embench.train.Method"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(dict(methods.items())) == ["crop"]  # warned once
    with pytest.raises(PluginError, match="plug-in 'broken' cannot be loaded"):
        methods.get("broken")  # naming it still stops


def test_unreadable_package_metadata_leaves_the_built_in_names(monkeypatch):
    import embench.core.registry as registry_module

    def damaged(group):
        raise ValueError("bad entry_points.txt")

    monkeypatch.setattr(registry_module, "discover", damaged)
    methods = _methods()
    with pytest.warns(UserWarning, match=r"the training method plug-ins \(embench.methods\) cannot be read \(ValueError"):
        assert methods.names() == ["crop"]
    assert methods.get("crop").__name__ == "Crop"


@pytest.mark.parametrize(("registry", "value", "needed"), [
    ("embench.models.poolers:POOLERS", "embench_anneal.method:AnnealOptions", "it is the class embench_anneal.method.AnnealOptions, not a function of a PoolInput"),
    ("embench.analysis.registry:ANALYSES", "embench_anneal.pooling:pool_min", "not a function made by @embench.analysis.base.analysis(NAME)"),
    ("embench.tasks.base:TASKS", "embench_anneal.pooling:pool_min", "not a task object with name, display, kind, prepare() and data_files()"),
    ("embench.models.families:FAMILIES", "embench_anneal.method:NotAMethod", "not an embench.models.families.Family"),
    ("embench.train.recipes:RECIPES", "embench_anneal.plugin_rows:RECIPE", "its name is 'crop': the entry point must be called 'crop'"),
    ("embench.evaluation.suites:SUITES", "embench_anneal.plugin_rows:RECIPE", "not an embench.evaluation.suites.Suite"),
])
def test_each_registry_checks_a_plugin_against_what_it_holds(tmp_path, monkeypatch, registry, value, needed):
    from embench.core.registry import import_path

    declared = import_path(registry)
    rows = "from embench.train.recipes import RECIPES\nRECIPE = RECIPES.get('crop')\n"
    write_distribution(tmp_path, "embench-odd", {declared.group: {"odd": value}},
                       {"embench_anneal.method": METHOD, "embench_anneal.pooling": POOLER, "embench_anneal.plugin_rows": rows})
    monkeypatch.syspath_prepend(str(tmp_path))
    fresh = Registry(declared.kind, plugins=declared.group, expects=declared.expects)
    with pytest.raises(PluginError, match="refused") as e:
        fresh.get("odd")
    assert needed in str(e.value) and "embench-odd 0.1" in str(e.value)


@pytest.mark.slow  # 2.3 s alone: it imports every analysis and task module
def test_every_built_in_entry_passes_the_check_a_plugin_must_pass():
    """The checks are the registries' own shape, not stricter: every built-in object passes (mteb's tasks aside,
    whose import takes seconds; they are objects of one class)."""
    from embench.cli.commands.list import CATALOGUE, LISTS

    for what in CATALOGUE:
        registry = LISTS.get(what)
        if registry.group is None:
            continue
        for name in registry.names():
            if not name.startswith("MTEB:"):
                assert registry.expects.problem(registry.get(name), name) is None, (what, name)


def test_every_registry_a_plugin_can_reach_has_its_group():
    from embench.cli.commands.list import CATALOGUE, LISTS

    groups = {what: LISTS.get(what).group for what in CATALOGUE}
    assert groups == {"tasks": "embench.tasks", "suites": "embench.suites", "poolers": "embench.poolers", "models": None,
                      "analyses": "embench.analyses", "datasets": "embench.datasets", "families": "embench.families",
                      "methods": "embench.methods", "recipes": "embench.recipes", "commands": None}


# -- end to end: a package installed by pip into a folder on PYTHONPATH, used by the CLI -------------------
def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


@pytest.mark.slow
def test_a_pip_installed_plugin_method_is_listed_and_trained_by_the_cli(tmp_path, tiny_bert_dir, data_root):
    """The pyproject of the README's Plugins section, installed with pip --target (3 s), then `embench list methods`
    and `embench train` in a process whose PYTHONPATH holds it; the method sees every step and the run's total."""
    src = tmp_path / "src"
    (src / "embench_anneal").mkdir(parents=True)
    (src / "embench_anneal" / "__init__.py").write_text("")
    (src / "embench_anneal" / "method.py").write_text(METHOD)
    (src / "embench_anneal" / "pooling.py").write_text(POOLER)
    (src / "pyproject.toml").write_text(textwrap.dedent('''
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "embench-anneal"
        version = "0.1"
        description = "an annealed InfoNCE and a min pooler"

        [project.entry-points."embench.methods"]
        annealed-infonce = "embench_anneal.method:AnnealedInfoNCE"

        [project.entry-points."embench.poolers"]
        min = "embench_anneal.pooling:pool_min"
        '''))
    site = tmp_path / "site"
    pip = _run(["-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", "--target", str(site), str(src)],
               dict(os.environ), tmp_path)
    assert pip.returncode == 0, pip.stderr
    env = {**os.environ, "PYTHONPATH": str(site), "EMBENCH_DATA": str(data_root), "EMBENCH_CACHE": str(tmp_path / "cache")}
    listed = _run(["-m", "embench.cli", "list", "methods"], env, tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "annealed-infonce" in listed.stdout.split() and "[plug-in: embench-anneal 0.1," in listed.stdout
    out = tmp_path / "run"
    trained = _run(["-m", "embench.cli", "train", "--method", "annealed-infonce", "--model", str(tiny_bert_dir),
                    "--train-data", "corpora", "--max-examples", "32", "--max-steps", "3", "--eval-steps", "0", "--out", str(out),
                    "--set", "log_steps=1", "--set", "start_temperature=0.2", "--quiet"], env, tmp_path)
    assert trained.returncode == 0, trained.stderr
    logged = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["method_step"] for r in logged] == [0, 1, 2]
    assert [r["temperature"] for r in logged] == pytest.approx([0.2, 0.11, 0.02])  # 0.2 + (0.02 - 0.2) * step / 2
    assert json.loads((out / "train_config.json").read_text())["method"] == "annealed-infonce"
    assert (out / "best" / "modules.json").is_file()


POOLER_PROBE = """
import json, sys
import numpy as np, torch
from transformers import AutoModel, AutoTokenizer
from typer.testing import CliRunner
from embench.cli import app
from embench.models.loader import load_model

model_dir, texts = sys.argv[1], ["a plug-in pooler", "takes the minimum over the real tokens", "of the last layer"]
r = CliRunner().invoke(app, ["run", "-m", model_dir, "-t", "STS16", "--pooling", "min", "-q"])
ours = load_model(model_dir, pooling="min").encode_batch(texts)
tok, bert = AutoTokenizer.from_pretrained(model_dir), AutoModel.from_pretrained(model_dir).eval()
with torch.no_grad():
    hand = [bert(**tok(t, return_tensors="pt")).last_hidden_state[0].min(0).values.numpy() for t in texts]
print(json.dumps({"exit": r.exit_code, "output": r.output[-2000:], "worst": float(np.abs(ours - np.stack(hand)).max())}))
"""


@pytest.mark.slow
def test_a_plugin_pooler_serves_run_pooling_and_pools_as_a_hand_computation(plugin_path, tiny_bert_dir, data_root, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(plugin_path), "EMBENCH_DATA": str(data_root),
           "EMBENCH_RESULTS": str(tmp_path / "results"), "EMBENCH_CACHE": str(tmp_path / "cache")}
    seen = json.loads(_run(["-c", POOLER_PROBE, str(tiny_bert_dir)], env, tmp_path).stdout.strip().splitlines()[-1])
    assert seen["exit"] == 0, seen["output"]
    assert seen["worst"] < 1e-6, seen["worst"]  # one text at a time: no padding, so the minimum is over every token
    (record,) = (tmp_path / "results").rglob("STS16-*.json")
    saved = json.loads(record.read_text())
    assert saved["encoder"]["pooling"] == "min" and -1 <= saved["main_score"] <= 1


@pytest.mark.slow
def test_a_broken_plugin_is_one_error_line_and_the_lists_still_work(tmp_path, data_root):
    write_distribution(tmp_path / "site", "embench-broken", BROKEN_ENTRY_POINTS, {"embench_anneal.method": METHOD})
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "EMBENCH_DATA": str(data_root)}
    failed = _run(["-m", "embench.cli", "train", "--method", "broken", "--show"], env, tmp_path)
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert "error: training method plug-in 'broken' cannot be loaded (ModuleNotFoundError" in failed.stderr
    assert "embench-broken 0.1" in failed.stderr
    listed = _run(["-m", "embench.cli", "list", "methods"], env, tmp_path)
    assert listed.returncode == 0 and listed.stdout.split()[0] == "unsup-simcse" and "broken " in listed.stdout
    assert "warning: training method plug-in 'crop' of embench-broken 0.1 is ignored" in listed.stderr
    crop = _run(["-m", "embench.cli", "train", "--method", "crop", "--model", "m", "--show"], env, tmp_path)
    assert crop.returncode == 0, crop.stderr
    typo = _run(["-m", "embench.cli", "train", "--method", "crop", "--model", "m", "--set", "bogus=1", "--show"], env, tmp_path)
    assert "'bogus' is neither a training option nor an option of method crop" in typo.stderr  # not the broken plug-in


# -- a plug-in's identity: its distribution, version and code in the keys of the vectors and records it makes ------
TASK = '''
class Echo:
    """a plug-in task (never prepared here: its key is what is tested)"""
    name, display, kind = "echo", "echo", "sts"

    def prepare(self, root, protocol):
        raise NotImplementedError

    def data_files(self, root):
        return []


ECHO = Echo()
'''


@pytest.fixture()
def fresh_plugins(tmp_path, monkeypatch):
    """``again()``: the global pooler and task registries as a new process finds them, with a plug-in package (a min
    pooler, a task) on the path; each registry is left as it was found."""
    from embench.models.poolers import POOLERS
    from embench.tasks import TASKS

    site = write_distribution(tmp_path / "site", "embench-anneal", {
        "embench.poolers": {"min": "embench_anneal.pooling:pool_min"}, "embench.tasks": {"echo": "embench_anneal.task:ECHO"}},
        {"embench_anneal.pooling": POOLER, "embench_anneal.task": TASK})
    monkeypatch.syspath_prepend(str(site))
    saved = {r: {k: (type(v)(v) if isinstance(v, (dict, list, set)) else v) for k, v in vars(r).items()} for r in (POOLERS, TASKS)}

    def again() -> None:
        for name in [m for m in sys.modules if m.split(".")[0] == "embench_anneal"]:
            del sys.modules[name]
        for registry, state in saved.items():
            vars(registry).update({k: (type(v)(v) if isinstance(v, (dict, list, set)) else v) for k, v in state.items()})
            registry._plugins_read = False  # read the entry points (of the package on the path) again

    again()
    yield SimpleNamespace(site=site, again=again)
    again()
    for registry, state in saved.items():
        vars(registry).update(state)


def test_a_plugin_pooler_is_keyed_by_its_distribution_and_code_and_a_built_in_by_its_name(fresh_plugins):
    """A plug-in ``min`` pooler changed in place (an editable install keeps the version) was served its old vectors and
    records: its identity was its name alone. Now it is keyed by its distribution, entry point and module's code."""
    from embench.models.poolers import view_keys

    assert view_keys("mean", 2, 2, {}) == view_keys("cls", 2, 2, {}) == {}  # embench's own: their keys as they were
    code = view_keys("min", 2, 2, {})["pooler_code"]
    assert code.startswith("embench-anneal 0.1, embench_anneal.pooling:pool_min, code ")
    fresh_plugins.again()
    assert view_keys("min", 1, 2, {}) == {"pooler_code": code}  # the same code: the same key
    pooling = fresh_plugins.site / "embench_anneal/pooling.py"
    pooling.write_text(pooling.read_text().replace(".min(1).values", ".min(1).values * 2"))
    fresh_plugins.again()
    changed = view_keys("min", 2, 2, {})["pooler_code"]
    assert changed != code and changed.startswith("embench-anneal 0.1, embench_anneal.pooling:pool_min, code ")


@pytest.mark.slow  # 0.8 s: the built-in task's modules
def test_a_plugin_task_s_record_key_names_its_code_and_a_built_in_task_s_keeps_its_key(fresh_plugins):
    """A plug-in task whose code changed was served its old record ("stored record reused"): the record's key named
    the task and protocol alone. A plug-in's now carries its origin and code; a built-in task's key is unchanged."""
    from embench.evaluation.protocols import EvalProtocol
    from embench.evaluation.results import record_key
    from embench.tasks import TASKS
    from embench.tasks.recorded_protocol import task_protocol

    assert task_protocol(TASKS.get("STS12"), EvalProtocol()).to_dict() == EvalProtocol().to_dict()
    first = task_protocol(TASKS.get("echo"), EvalProtocol()).to_dict()
    assert first == {**EvalProtocol().to_dict(), "task_code": first["task_code"]}
    assert first["task_code"].startswith("embench-anneal 0.1, embench_anneal.task:ECHO, code ")
    task = fresh_plugins.site / "embench_anneal/task.py"
    task.write_text(task.read_text().replace("return []", "return []  # edited"))
    fresh_plugins.again()
    second = task_protocol(TASKS.get("echo"), EvalProtocol()).to_dict()
    assert second["task_code"] != first["task_code"]
    assert record_key("echo", {}, second) != record_key("echo", {}, first)


@pytest.mark.slow  # imports the grid worker (and the API)
def test_a_grid_runs_a_plugin_task_s_cells_under_the_protocol_options_alone():
    """A plug-in task's cells carry its ``task_code`` in their protocol (the record's key has it); evaluate() takes
    protocol options only, so the worker once called it with task_code= and failed every cell of the task."""
    from embench.evaluation.protocols import EvalProtocol
    from embench.grid.state import Cell
    from embench.grid.worker import _by_protocol

    cells = [Cell("m", "echo", {**EvalProtocol().to_dict(), "task_code": "embench-anneal 0.1, code 0"}, "k1"),
             Cell("m", "STS12", EvalProtocol().to_dict(), "k2")]
    ((options, group),) = _by_protocol(cells)
    assert options == EvalProtocol().to_dict() and group == cells


@pytest.mark.slow  # loads the tiny BERT four times
def test_a_changed_plugin_pooler_gets_other_cache_and_record_keys_and_built_ins_keep_theirs(fresh_plugins, tiny_bert_dir):
    import embench
    from embench.core.hashing import stable_hash
    from embench.evaluation.results import record_key

    def keys(pooling: str):
        enc = embench.load_model(tiny_bert_dir, pooling=pooling, device="cpu")
        return enc, enc.cache_key(), record_key("STS12", enc.describe(), {})

    for pooling in ("mean", "cls"):  # the cache key of embench's own poolers as it was: existing caches stay valid
        enc, cache, _ = keys(pooling)
        assert cache == stable_hash({"fingerprint": enc.fingerprint, "pooling": pooling, "layer": None, "max_length": 512,
                                     "dtype": "fp32", "normalize": False, "lowercase": False, "prompt": ""}, 24)
    enc, cache, record = keys("min")
    assert enc.describe()["pooler_code"] == enc.settings.extra["pooler_code"]
    assert enc.view(1).settings.extra["pooler_code"] == enc.settings.extra["pooler_code"]
    assert enc.view(pooling="mean").cache_key() == keys("mean")[1]  # a view pooled by a built-in: no plug-in's code
    pooling = fresh_plugins.site / "embench_anneal/pooling.py"
    pooling.write_text(pooling.read_text().replace(".min(1).values", ".min(1).values * 2"))
    fresh_plugins.again()
    _, cache2, record2 = keys("min")
    assert cache2 != cache and record2 != record
