"""The range an InfoNCE temperature is taken in, checked with the other options before anything loads.

InfoNCE divides each cosine by the temperature. At 1e-40 the logits overflow float32 and the first loss is NaN; at
1e40 every logit is 0, the loss sits at ln(batch) with no gradient, and the run stops as a collapse. Either was
blamed on --lr. The papers' settings lie well inside the limits: SimCSE's Table D.1 tries 0.001 to 1 (0.05 best),
the cropping paper, MultiCSR, JTCSE and BeLLM use 0.05, CLIP's learnt one is kept at 0.01 or above.
"""

from __future__ import annotations

import math

from ..core.errors import EmbenchError

LOWEST, HIGHEST = 1e-4, 10.0


def check_temperature(value: float, flag: str = "--temperature") -> None:
    """``value`` finite and within [LOWEST, HIGHEST], or one error naming ``flag``."""
    if not (isinstance(value, (int, float)) and math.isfinite(value) and LOWEST <= value <= HIGHEST):
        raise EmbenchError(f"{flag} must be at least {LOWEST:g} and at most {HIGHEST:g}, got {value} (InfoNCE divides "
                           "the cosines by it; papers use 0.001 to 1, SimCSE 0.05)")
