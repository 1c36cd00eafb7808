"""The papers' training recipes as named presets (``embench train --recipe NAME [--show]``).

Each recipe is a layer of training options between the method's defaults and the user's file and
command line. It cites the papers and scripts it follows twice: as one paragraph (``cites``: the model
card, the ``--show`` header) and per option (``sources``: the section, table or script line each value
comes from, printed beside it by ``--show``). Batch sizes are GLOBAL: over every process and every
accumulation step (``--grad-accumulation`` fits them on smaller GPUs without changing the in-batch
negatives). The built-in recipes live one paper a module (``recipes_simcse.py``, ``recipes_crop.py``,
``recipes_bellm.py``, ``recipes_jtcse.py``, ``recipes_multicsr.py``), each value written beside its source.

A recipe made for one model carries it as the default of ``--model`` (SimCSE's bert-base-uncased, ...),
so a run without ``--model`` trains what the paper trained, or says that model cannot be had here; a
recipe with no single model (crop fine-tunes any pretrained encoder; JTCSE's towers are the authors'
own checkpoints) needs ``--model``. Neither falls back to embench's default model in silence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.errors import EmbenchError
from ..core.plugins import instance_of
from ..core.registry import Registry


@dataclass(frozen=True)
class Recipe:
    name: str
    description: str
    cites: str
    values: dict[str, Any] = field(default_factory=dict)
    requires: dict[str, str] = field(default_factory=dict)  # option -> why the recipe cannot run without it
    sources: dict[str, str] = field(default_factory=dict)  # option -> the section, table or script line it follows

    def __post_init__(self) -> None:
        # optional (a plug-in's recipe may cite one paragraph only); given, one source per option set, no other
        if not self.sources:
            return
        unsourced = sorted(set(self.values) - set(self.sources))
        stray = sorted(set(self.sources) - set(self.values))
        blank = sorted(k for k, s in self.sources.items() if k in self.values and (s is None or not str(s).strip()))
        problems = ([f"no source for {', '.join(unsourced)}"] if unsourced else []) + \
            ([f"a source for {', '.join(stray)}, which it does not set"] if stray else []) + \
            ([f"an empty source for {', '.join(blank)}"] if blank else [])
        if problems:
            raise EmbenchError(f"recipe {self.name}: " + "; ".join(problems))

    @classmethod
    def cited(cls, name: str, description: str, cites: str, settings: dict[str, tuple[Any, str]],
              requires: dict[str, str] | None = None) -> Recipe:
        """A recipe from ``option: (value, source)`` pairs: each value written beside where it comes from."""
        return cls(name, description, cites, {k: v for k, (v, _) in settings.items()}, dict(requires or {}),
                   {k: src for k, (_, src) in settings.items()})

    def source(self, option: str) -> str | None:
        """Where this recipe's value of ``option`` comes from; None when it does not set ``option``."""
        if option not in self.values:
            return None
        return self.sources.get(option) or f"recipe {self.name}"

    @property
    def model(self) -> str | None:
        """The model the paper trains (the default of --model under this recipe), or None when it needs --model."""
        return self.values.get("model")


RECIPES: Registry[Recipe] = Registry("training recipe", plugins="embench.recipes",
                                     expects=instance_of("embench.train.recipes:Recipe", "an embench.train.recipes.Recipe"))


def default_model_note(recipe: str | None, model: str | None) -> str:
    """Where ``model`` came from when it is ``recipe``'s own (empty otherwise): said with a load error, so that
    a run without --model that cannot find the paper's model says which option chooses another."""
    if not recipe or model is None or RECIPES.get(recipe).model != model:
        return ""
    from .methods import METHODS

    method = RECIPES.get(recipe).values.get("method")
    other = ("a decoder LLM: a folder or a .gguf file, e.g. SmolLM2-135M-Instruct offline" if method is not None
             and getattr(METHODS.get(method), "trains_decoders", False) else "a folder, e.g. all-MiniLM-L6-v2 offline")
    return (f"{model} is the model --recipe {recipe} trains by default (the paper's), and it is not available here: "
            f"give --model NAME ({other}) or make it reachable (the hub, or a copy in $EMBENCH_MODELS)")


# One module per paper; each is imported on first use (``embench train --help`` and the name checks import none).
for _name, _where in (("simcse-unsup", "recipes_simcse:SIMCSE_UNSUP"), ("simcse-sup", "recipes_simcse:SIMCSE_SUP"),
                      ("crop", "recipes_crop:CROP"), ("crop-scratch", "recipes_crop:CROP_SCRATCH"),
                      ("bellm", "recipes_bellm:BELLM"), ("jtcse-bert", "recipes_jtcse:JTCSE_BERT"),
                      ("jtcse-roberta", "recipes_jtcse:JTCSE_ROBERTA"), ("multicsr", "recipes_multicsr:MULTICSR"),
                      ("multicsr-code", "recipes_multicsr:MULTICSR_CODE")):
    RECIPES.add(_name, f"embench.train.{_where}")
