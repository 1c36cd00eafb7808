"""Hostile or broken files give one clear error, never another folder's weights, code run or a file read (issue 35)."""

from __future__ import annotations

import json
import pickle
import shutil

import pytest

from embench.core.errors import EmbenchError


def _st_folder(tmp_path, tiny_bert_dir, modules=None):
    """A sentence-transformers folder around the tiny BERT: Transformer at the root, mean Pooling."""
    folder = tmp_path / "st"
    shutil.copytree(tiny_bert_dir, folder)
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True}))
    (folder / "modules.json").write_text(json.dumps(modules or [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    return folder


@pytest.mark.parametrize("path", ["../other", "/etc", "1_Pooling/../../other"])
def test_a_module_path_leading_outside_the_folder_is_refused(tmp_path, tiny_bert_dir, path):
    from embench.models.st_folder import sentence_transformers_config

    shutil.copytree(tiny_bert_dir, tmp_path / "other")
    folder = _st_folder(tmp_path, tiny_bert_dir, [{"idx": 0, "path": path, "type": "sentence_transformers.models.Transformer"}])
    with pytest.raises(EmbenchError, match=r"modules\.json: the Transformer path .* points outside .*; refused"):
        sentence_transformers_config(folder)


@pytest.mark.parametrize("text", ["[{", '{"a": 1}', '[{"path": 3}]', "[1, 2]"])
def test_a_malformed_modules_json_is_one_error_naming_it(tmp_path, tiny_bert_dir, text):
    from embench.models.st_folder import sentence_transformers_config

    folder = _st_folder(tmp_path, tiny_bert_dir)
    (folder / "modules.json").write_text(text)
    with pytest.raises(EmbenchError, match=r"modules\.json: (not readable JSON|expected a list of modules)"):
        sentence_transformers_config(folder)


class _Payload:  # unpickling it would run code: torch's weights_only loader must refuse it
    def __reduce__(self):
        return (print, ("code ran",))


def _dense(tmp_path, config: dict, weights: bytes | None = None):
    folder = tmp_path / "2_Dense"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    if weights is not None:
        (folder / "pytorch_model.bin").write_bytes(weights)
    return folder


def test_a_pickled_dense_file_is_refused_without_running_it(tmp_path, capsys):
    from embench.models.st_folder import load_dense

    folder = _dense(tmp_path, {"in_features": 4, "out_features": 2}, pickle.dumps({"linear.weight": _Payload()}))
    with pytest.raises(EmbenchError, match=r"pytorch_model\.bin: not a plain tensor file .* save the Dense weights as model\.safetensors"):
        load_dense(folder)
    assert "code ran" not in capsys.readouterr().out


@pytest.mark.parametrize("activation", ["torch.nn.modules.activation.Nope", "torch.nn.modules.nothing.Tanh",
                                        "torch.nn.modules.activation.F", "os.system"])
def test_an_unknown_dense_activation_is_one_error(tmp_path, activation):
    from embench.models.st_folder import load_dense

    folder = _dense(tmp_path, {"in_features": 4, "out_features": 2, "activation_function": activation})
    with pytest.raises(EmbenchError, match=r"config\.json: .*activation_function"):
        load_dense(folder)


def test_a_yaml_alias_bomb_in_a_training_config_is_refused_at_once(tmp_path):
    from embench.train.config import read_config_file

    rows = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    rows += [f"{n}: &{n} [{', '.join(['*' + p] * 9)}]" for p, n in zip("abcdefgh", "bcdefghi", strict=True)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(rows) + "\n")
    with pytest.raises(EmbenchError, match=r"YAML aliases \(\*name\) are not accepted"):
        read_config_file(bomb)


def test_latex_special_characters_of_a_model_name_are_printed_not_run():
    from embench.report.tables import latex_escape

    assert latex_escape(r"m\input{/etc/passwd}~^&") == r"m\textbackslash{}input\{/etc/passwd\}\textasciitilde{}\textasciicircum{}\&"


def test_an_mteb_export_stays_in_its_folder_whatever_a_record_says(tmp_path):
    from types import SimpleNamespace

    from embench.tasks.mteb.adapter import mteb_model_name, mteb_revision

    record = SimpleNamespace(encoder={"revision": "../../../../tmp/evil", "fingerprint": "f"}, protocol={})
    revision = mteb_revision(record)
    assert "/" not in revision and not revision.startswith(".")
    assert mteb_model_name("a/..") == "embench/a__.."  # not the hub id form: ".." is no name
    assert mteb_model_name("org/model") == "org/model"
    # embench train's folders are named alike in every run: every seed's best/ was filed as embench/best, one kept
    assert [mteb_model_name(f"runs/simcse/seed-{s}/best") for s in (1, 2)] == ["embench/simcse-seed-1-best",
                                                                               "embench/simcse-seed-2-best"]
    assert mteb_model_name("./runs/crop/checkpoints/step-000200") == "embench/crop-checkpoints-step-000200"


def test_a_model_folder_that_asks_for_its_own_code_is_refused_and_nothing_runs(tmp_path):
    from embench.models.loader import load_model

    folder = tmp_path / "remote"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "evilmodel", "architectures": ["EvilModel"],
                                                    "auto_map": {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel"}}))
    (folder / "evil.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').write('code ran')\n")
    with pytest.raises(EmbenchError) as refused:
        load_model(folder)
    assert not (tmp_path / "ran").exists()
    # one line of embench's, not transformers' four asking for trust_remote_code=True (no option gives it) and
    # linking the folder as https://hf.co//tmp/...
    assert str(refused.value) == (f"{folder}: the model asks to run its own code (auto_map in config.json); embench does "
                                  "not run a model's own code (trust_remote_code stays off)")


def test_a_gguf_file_declaring_absurd_counts_is_one_clean_error(tmp_path):
    import struct

    from embench.models.loader import load_model

    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<I", 3) + struct.pack("<Q", 2**62) + struct.pack("<Q", 2**62))
    with pytest.raises(EmbenchError, match=r"could not load model .*m\.gguf"):
        load_model(path)


def test_a_data_download_through_a_symlink_out_of_the_root_is_refused(tmp_path):
    import hashlib

    from embench.data.manifest import download
    from embench.data.root import DataRoot

    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "data"
    root.mkdir()
    (root / "corpora").symlink_to(outside, target_is_directory=True)
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"version": 1, "files": [{"path": "corpora/a.txt", "task": "corpora", "url": "http://127.0.0.1:9/a",
                                                             "sha256": hashlib.sha256(b"x").hexdigest()}]}))
    with pytest.raises(EmbenchError, match="points outside"):
        download(DataRoot(root), manifest=manifest)
    assert list(outside.iterdir()) == []


def test_a_table_on_the_terminal_prints_brackets_in_names_as_text():
    """rich read "best [tower-1]" (a twin's tower, as the analyses label it) as markup and printed "best"."""
    import pandas as pd

    from embench.report.tables import render

    frame = pd.DataFrame({"e_cls [x]": [0.5, 0.25, 0.3]}, index=pd.Index(["best [tower-1]", "best [tower-2]", "best"], name="model"))
    for text in (render(frame, "table", title="cls [energy]"), render(frame, "table", highlight=True)):
        assert "best [tower-1]" in text and "best [tower-2]" in text and "e_cls [x]" in text
    assert "cls [energy]" in render(frame, "table", title="cls [energy]")


def test_advice_in_errors_names_options_that_exist():
    """Two errors sent users to --crop-min-chars and --no-stratify, which no command has."""
    import numpy as np

    from embench.analysis.knn import split_indices
    from embench.train.crops import CropCorpus

    with pytest.raises(EmbenchError, match=r"set them with --set crop_min_chars=N, --set crop_max_chars=N"):
        CropCorpus.build(["Too short. To crop."])
    with pytest.raises(EmbenchError, match=r"--set crop_sentences must be at least 1"):
        CropCorpus.build(["x"], t=0)
    with pytest.raises(EmbenchError, match=r"`embench analyze knn --set stratify=false` \(layers too\); while training, `--eval-analysis knn:\.\.\.,stratify=false`; "
                                           r"knn_accuracy\(\.\.\., stratify=False\)"):
        split_indices(np.array([0, 0, 0, 1]), 0.25, 42)


def test_a_figure_asked_for_without_its_output_is_an_error_not_an_empty_figure(tmp_path):
    """Without -m, a figure whose CSV no folder held was drawn with empty axes, and `embench report` exited 0."""
    from embench.report.figures import compose

    with pytest.raises(EmbenchError, match=r"figure layer-removal: no layer_removal.csv under .*; make it with `embench analyze layer-removal"):
        compose("layer-removal", [tmp_path], tmp_path / "figures")
    assert not (tmp_path / "figures").exists()
