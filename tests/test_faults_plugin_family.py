"""A plug-in model family's patch is its code: keyed by the family's name alone, an edited hook was served the old
hook's vectors (models/families.py ``family_identity``; core/code_identity.py)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest
from test_plugins import write_distribution  # one writer of a plug-in package and its .dist-info

FAMILY = '''
from embench.models.families import Family

SCALE = 1.0


def patch(model):
    return model


FAM = Family("probefam", "a family that patches the model", pooling="mean", patch=patch)
'''


@pytest.fixture()
def plugin_family(tmp_path, monkeypatch):
    """``again()``: the family registry as a new process finds it, with the plug-in package on the path."""
    from embench.models.families import FAMILIES

    site = write_distribution(tmp_path / "site", "embench-probefam", {"embench.families": {"probefam": "embench_probefam.family:FAM"}},
                              {"embench_probefam.family": FAMILY})
    monkeypatch.syspath_prepend(str(site))
    saved = {k: (type(v)(v) if isinstance(v, (dict, list, set)) else v) for k, v in vars(FAMILIES).items()}

    def again() -> None:
        for name in [m for m in sys.modules if m.split(".")[0] == "embench_probefam"]:
            del sys.modules[name]
        vars(FAMILIES).update({k: (type(v)(v) if isinstance(v, (dict, list, set)) else v) for k, v in saved.items()})
        FAMILIES._plugins_read = False

    again()
    yield SimpleNamespace(site=site, again=again)
    again()
    vars(FAMILIES).update(saved)


def test_a_plugin_family_s_patch_is_keyed_by_its_code_and_a_built_in_family_by_its_name(plugin_family):
    from embench.models.families import FAMILIES, family_identity

    bert = SimpleNamespace(model_type="bert")
    assert family_identity(FAMILIES.get("causal-lm"), bert, False, False) == {"family": "causal-lm"}  # as it was
    first = family_identity(FAMILIES.get("probefam"), bert, False, False)["family"]
    assert first.startswith("probefam (embench-probefam 0.1, embench_probefam.family:FAM, code ")
    plugin_family.again()
    assert family_identity(FAMILIES.get("probefam"), bert, False, False)["family"] == first  # the same code, the same key
    module = plugin_family.site / "embench_probefam/family.py"
    module.write_text(module.read_text().replace("SCALE = 1.0", "SCALE = 2.0"))
    plugin_family.again()
    assert family_identity(FAMILIES.get("probefam"), bert, False, False)["family"] != first
