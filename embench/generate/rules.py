"""Self-curation: reading a score from the LLM's answer, and the rules that keep a triplet (MultiCSR §3.2).

* ``paper`` (Eq. 4/8): keep (x, x+, x-) iff a >= alpha, b <= beta and a >= b + gamma, where a and b are the
  LLM's 0-5 similarity of (x, x+) and (x, x-); alpha 3, beta 3, gamma 1 in the main results (Table 6).
* ``code`` (Circle-Ming/MultiCSR ``flan_filter.py``, filter type 15): keep when one hypothesis scores
  <= 3 (the negative line, ``beta``) and the other >= 3 (the positive line, ``alpha``) and the two scores
  differ; when the "contradiction" is the one that scores high, the roles are swapped (it becomes the
  positive, the "entailment" the hard negative).

The paper does not say how a score is read from the answer (notes, §1.2). Here: the first number in the
answer (an integer, or a decimal such as 4.5: Table 11 prints one); none, or one outside 0-5, drops the
triplet with its reason, never an error. (The code keeps only answers that are exactly "d" or "d.d".)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RULES = ("paper", "code")
# a '-' is the number's sign unless a word comes before it ("sentence-2" is 2): a score of -1 must not be read as 1
_NUMBER = re.compile(r"((?:(?<![\w.])-)?(?<![\d.])\d+(?:\.\d+)?)")


def parse_score(answer: str) -> tuple[float | None, str]:
    """(score, "") or (None, why it cannot be read)."""
    m = _NUMBER.search(answer or "")
    if m is None:
        return None, "no score in the answer"
    value = float(m.group(1))
    if not 0.0 <= value <= 5.0:
        return None, "score outside 0-5"
    return value, ""


@dataclass(frozen=True)
class Decision:
    kept: bool
    reason: str  # "kept", "kept (roles swapped)" or why it was dropped
    swapped: bool = False


def keep_paper(a: float, b: float, alpha: float = 3.0, beta: float = 3.0, gamma: float = 1.0) -> Decision:
    """Eq. 4: a >= alpha, b <= beta, a >= b + gamma (the first condition that fails is the reason)."""
    if a < alpha:
        return Decision(False, "entailment below alpha")
    if b > beta:
        return Decision(False, "contradiction above beta")
    if a < b + gamma:
        return Decision(False, "margin below gamma")
    return Decision(True, "kept")


def keep_code(a: float, b: float, positive_line: float = 3.0, negative_line: float = 3.0) -> Decision:
    """The authors' filter (flan_filter.py): one score <= the negative line, the other >= the positive line,
    the two different; roles swapped when the contradiction is the high one."""
    if a == b:
        return Decision(False, "equal scores")
    if a <= negative_line and b >= positive_line:
        return Decision(True, "kept (roles swapped)", swapped=True)
    if b <= negative_line and a >= positive_line:
        return Decision(True, "kept")
    return Decision(False, "both on one side of the lines")


def decide(rule: str, a: float | None, b: float | None, alpha: float, beta: float, gamma: float,
           why_a: str = "", why_b: str = "") -> Decision:
    """The decision for scores ``a`` (entailment) and ``b`` (contradiction), either of which may be unreadable."""
    if a is None:
        return Decision(False, f"entailment: {why_a or 'no score in the answer'}")
    if b is None:
        return Decision(False, f"contradiction: {why_b or 'no score in the answer'}")
    if rule == "paper":
        return keep_paper(a, b, alpha, beta, gamma)
    return keep_code(a, b, positive_line=alpha, negative_line=beta)
