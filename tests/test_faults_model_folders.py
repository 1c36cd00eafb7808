"""What a local folder's own files decide: a catalogue row applies to a hub id or alias, never to a folder the name
reaches (however spelled); a ``--prompt`` template on a folder whose Pooling leaves prompts out; the file that names
an adapter's missing base."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from test_prompts_catalogue import st_folder  # a sentence-transformers folder around the tiny BERT

import embench
from embench.core.errors import ModelLoadError

TEXTS = ["A man is playing a guitar.", "Two dogs run across the park."]


@pytest.mark.slow  # loads the tiny BERT three times
def test_a_folder_named_like_a_catalogue_model_is_read_alike_however_it_is_spelled(tmp_path, tiny_bert_dir, monkeypatch):
    """``intfloat/e5-base-v2`` in the working folder took the catalogue row's mean pooling, normalisation and prompts
    when typed bare, and not as ``./intfloat/e5-base-v2`` or an absolute path. sentence-transformers loads such a folder
    with its own files; so does embench, for every spelling."""
    shutil.copytree(tiny_bert_dir, tmp_path / "intfloat/e5-base-v2")
    monkeypatch.chdir(tmp_path)
    seen = set()
    for name in ("intfloat/e5-base-v2", "./intfloat/e5-base-v2", str(tmp_path / "intfloat/e5-base-v2")):
        enc = embench.load_model(name, device="cpu")
        seen.add((enc.settings.pooling, enc.settings.normalize, enc.settings.prompt, enc.prompt_set is None))
    assert seen == {("cls", False, "", True)}  # the folder's own: a plain BERT's pooling, no row


@pytest.mark.slow  # encodes with the tiny BERT four times
def test_a_prompt_template_leaves_its_prefix_out_where_the_folders_pooling_leaves_prompts_out(tmp_path, tiny_bert_dir):
    """``load_model(folder, prompt="Q: {text}")`` pooled the prompt's tokens though the folder's Pooling says
    ``include_prompt: false``, which ``encode(prompt="Q: ")`` (and sentence-transformers) honour: other vectors."""
    folder = st_folder(tmp_path, tiny_bert_dir, default=None, include_prompt=False)
    plain = embench.load_model(folder, device="cpu")
    expected = plain.encode(TEXTS, prompt="Q: ", use_cache=False, show_progress=False)
    templated = embench.load_model(folder, device="cpu", prompt="Q: {text}")
    assert templated.settings.extra["prompt_tokens_excluded"] == 3  # [CLS] q : (uncased)
    np.testing.assert_allclose(templated.encode(TEXTS, use_cache=False, show_progress=False), expected, atol=1e-6)
    # text after {text} has no sentence-transformers form: the prefix before it is left out, the rest is pooled
    suffixed = embench.load_model(folder, device="cpu", prompt="Q: {text} end")
    assert suffixed.settings.extra["prompt_tokens_excluded"] == 3
    kept = st_folder(tmp_path / "kept", tiny_bert_dir, default=None, include_prompt=True)
    assert "prompt_tokens_excluded" not in embench.load_model(kept, device="cpu", prompt="Q: {text}").settings.extra


def test_an_adapter_whose_base_is_not_found_names_the_file_that_names_it(tmp_path):
    """A plain peft folder whose ``base_model_name_or_path`` is relative (to where it was trained) and not found here:
    the error listed the places tried but not which file named that base."""
    folder = tmp_path / "adapter"
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "models/no-such-base", "peft_type": "LORA"}))
    with pytest.raises(ModelLoadError) as caught:
        embench.load_model(folder, device="cpu")
    assert f"{folder.resolve() / 'adapter_config.json'} (base_model_name_or_path)" in str(caught.value)
