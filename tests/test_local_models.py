"""embench's own model folder (issue 36, item 6): a checkpoint fetched into ``$EMBENCH_MODELS`` (default
``~/.cache/embench/models``, where ``get-mpnet.sh`` puts all-mpnet-base-v2) loads by its name, offline."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from embench.core.errors import ModelLoadError
from embench.models.loader import load_model
from embench.models.local_models import candidates, models_folder
from embench.models.model_names import resolve_model_path


@pytest.fixture()
def models_dir(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    monkeypatch.setenv("EMBENCH_MODELS", str(folder))
    return folder


def test_a_model_fetched_into_the_model_folder_loads_by_its_name(models_dir, tiny_bert_dir):
    shutil.copytree(tiny_bert_dir, models_dir / "tiny-fetched")
    enc = load_model("tiny-fetched", device="cpu")
    assert Path(enc.source) == (models_dir / "tiny-fetched").resolve()
    assert enc.name == "tiny-fetched"
    assert enc.encode_batch(["A man plays a guitar."]).shape == (1, 32)


def test_a_hub_id_finds_its_copy_under_the_model_name(models_dir, tiny_bert_dir):
    shutil.copytree(tiny_bert_dir, models_dir / "tiny-fetched")
    folder, _, _ = resolve_model_path("sentence-transformers/tiny-fetched")
    assert folder == (models_dir / "tiny-fetched").resolve()


def test_the_load_error_says_it_looked_in_the_model_folder(models_dir):
    with pytest.raises(ModelLoadError) as e:
        load_model("all-mpnet-base-v2")
    looked = [t for t in e.value.tried if "embench's model folder" in t]
    assert looked and str(models_dir / "all-mpnet-base-v2") in looked[0] and "EMBENCH_MODELS" in looked[0]


def test_a_folder_without_a_model_in_it_is_named_as_such(models_dir):
    (models_dir / "half-fetched").mkdir()
    folder, tried, _ = resolve_model_path("half-fetched")
    assert folder is None and any("holds no config.json or modules.json" in t for t in tried)


def test_the_model_folder_defaults_to_embench_s_cache_and_paths_are_never_looked_up_there(monkeypatch):
    monkeypatch.delenv("EMBENCH_MODELS", raising=False)
    assert models_folder() == Path("~/.cache/embench/models").expanduser()
    assert all(candidates(p) == [] for p in ("./x", "/abs/x", "~/x", "a/b/c"))
