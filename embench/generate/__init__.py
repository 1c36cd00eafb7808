"""LLM data generation and curation: MultiCSR stages 1 and 2 (Wang et al., 2024, §3.1-3.2).

>>> from embench.generate import generate_triplets, curate_triplets                     # doctest: +SKIP
>>> generate_triplets("SmolLM2-135M-Instruct.Q4_1.gguf", "snli", "triplets.csv", limit=100)   # doctest: +SKIP
>>> curate_triplets("SmolLM2-135M-Instruct.Q4_1.gguf", "triplets.csv", rule="paper")          # doctest: +SKIP

Heavy imports (torch, transformers) happen on first use of a name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {"generate_triplets": ".triplets", "GenerationResult": ".triplets",
                                               "curate_triplets": ".curation", "CurationResult": ".curation"})
__all__ = ["CurationResult", "GenerationResult", "curate_triplets", "generate_triplets"]

if TYPE_CHECKING:
    from .curation import CurationResult, curate_triplets
    from .triplets import GenerationResult, generate_triplets
