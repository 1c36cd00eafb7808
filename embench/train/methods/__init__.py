"""Training methods, one module each, registered lazily by name (``embench list methods``).

A new method is one file: a subclass of :class:`~embench.train.methods.base.Method` and one line
here (or ``METHODS.add(name, cls)`` from anywhere, e.g. a test), or an entry point of the group
``embench.methods`` in a package of its own (``docs/ARCHITECTURE.md``, Plugins).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.lazy import lazy_exports
from ...core.plugins import subclass_of
from ...core.registry import Registry

if TYPE_CHECKING:
    from .base import Batch, Method, NoOptions, Outputs

METHODS: Registry[type[Method]] = Registry("training method", plugins="embench.methods", expects=subclass_of(
    "embench.train.methods.base:Method", "a subclass of embench.train.Method"))
METHODS.add("unsup-simcse", "embench.train.methods.simcse:UnsupSimCSE", "simcse",
            description="unsupervised SimCSE: dropout positives, MLP head in training only")
METHODS.add("sup-simcse", "embench.train.methods.simcse:SupSimCSE",
            description="supervised SimCSE: NLI entailment positives, contradiction hard negatives")
METHODS.add("crop", "embench.train.methods.crop:Crop", "crops",
            description="cropping: two chunks of consecutive sentences of one document")
METHODS.add("dropout", "embench.train.methods.crop:Dropout",
            description="the cropping paper's dropout baseline: one chunk, two dropout masks")
METHODS.add("jtcse", "embench.train.methods.jtcse:JTCSE",
            description="JTCSE: twin towers, tensor-modulus constraint, cross-attention in training")
METHODS.add("bellm", "embench.train.methods.bellm:BeLLM",
            description="BeLLM: decoder LLM, bidirectional last layer(s), representative-word prompt, LoRA, NLI contrastive")
METHODS.add("distill", "embench.train.methods.distill:Distill",
            description="distillation: MSE from the student's vector to a teacher's (e.g. an ensemble), computed once")

# the base classes on first use: listing the methods imports no torch
__getattr__, __dir__ = lazy_exports(__name__, {n: ".base" for n in ("Batch", "Method", "NoOptions", "Outputs")})
__all__ = ["METHODS", "Batch", "Method", "NoOptions", "Outputs"]
