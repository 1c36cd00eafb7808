"""Where to cut texts sorted by length into batches, each padded to its longest text, so that the padded tokens
a device computes sum least.

A batch of texts sorted longest first costs its count times its first text's length. Cutting greedily (each batch
as full as its budget allows) leaves batches that mix long and short texts; the cut of least cost follows the
lengths. Two users: the engine's token-budget batches (``encoding/batching.py``: sts-all's 372.6k real tokens pad to
460k in batches of 65,536 filled in turn over one order, to 388k in least-cost ones with a floor of 16,384) and the
trainer's length buckets and splits by text (``train/length_groups.py``).
"""

from __future__ import annotations

import numpy as np

# the cut's dynamic programming runs over at most about this many places to cut (``bounds_to_try``): exact up to
# this many texts; beyond, its cost within 0.01 % of the exact cut's on sts-all's chunks (in 3 ms a chunk of 4,096
# texts instead of 60) and within 0.2 % on the tests' random lengths
MOST_BOUNDS = 256
# a batch smaller than this share of its budget is counted as that large (the floor of ``least_cost_cuts``): below it
# a GPU's matrix products are no longer filled. The engine's batches and the trainer's buckets (its
# ``bucket_min_tokens`` unset) both take it
FLOOR_SHARE = 4


def least_cost_cuts(desc: list[int], budget: int, floor: int, max_count: int | None = None) -> list[int]:
    """Where to cut lengths sorted longest first (``desc``) into runs, each padded to its first length: the bounds
    ``[0, ..., n]`` that minimise the sum over runs of max(padded tokens, ``floor``), no run over ``budget`` padded
    tokens unless it is one text, none of more than ``max_count`` texts (None: no cap); of equal costs, the one that
    pads least, then the one with fewer runs (with a floor at the budget: the fewest runs, padded least).

    The floor is what a run costs however small: a small batch is not cheaper in proportion on a GPU, whose matrix
    products it leaves unfilled and whose kernel launches it no longer hides. Dynamic programming over the run that
    ends at each place to cut (``bounds_to_try``): the run ``[i, j)`` pads ``(j - i) * desc[i]`` tokens, which
    shrinks as ``i`` moves right, so the starts within budget and cap are those from a point that only moves right
    as ``j`` grows."""
    n, desc = len(desc), [max(1, int(x)) for x in desc]
    cap = n if max_count is None else max(1, max_count)
    places = bounds_to_try(desc, budget, cap)
    at, first = np.asarray(places, dtype=np.int64), np.asarray([desc[p] for p in places[:-1]] + [1], dtype=np.int64)
    cost, pad, runs, start = (np.zeros(len(places), dtype=np.int64) for _ in range(4))  # best cut up to each place
    lo = 0
    for j in range(1, len(places)):
        end = places[j]
        while lo < j - 1 and ((end - places[lo]) * desc[places[lo]] > budget or end - places[lo] > cap):
            lo += 1  # a run over the budget or the cap (a run between neighbouring places never is, or is one text)
        padded = (end - at[lo:j]) * first[lo:j]
        total = cost[lo:j] + np.maximum(padded, floor)
        ties = np.flatnonzero(total == total.min())
        if len(ties) > 1:  # of equal costs: the least padding, then the fewest runs
            padding = pad[lo + ties] + padded[ties]
            ties = ties[padding == padding.min()]
            ties = ties[runs[lo + ties] == runs[lo + ties].min()]
        k = int(ties[0])
        cost[j], pad[j], runs[j], start[j] = total[k], pad[lo + k] + padded[k], runs[lo + k] + 1, lo + k
    bounds = [len(places) - 1]
    while bounds[-1] > 0:
        bounds.append(int(start[bounds[-1]]))
    return [places[b] for b in bounds[::-1]]


def bounds_to_try(desc: list[int], budget: int, cap: int) -> list[int]:
    """The places a cut of ``desc`` may fall: every one for up to ``MOST_BOUNDS`` texts (the exact cut); beyond,
    where the length changes, and inside a run of one length every ``grain`` texts (n / MOST_BOUNDS), or more often
    where the budget or the cap holds fewer texts of that length, so that any two neighbouring places make a run
    within both. A cut a run of equal lengths does not end at can move by less than ``grain`` texts of that length."""
    n = len(desc)
    grain, places, s = max(1, -(-n // MOST_BOUNDS)), [], 0
    while s < n:
        e = s + 1
        while e < n and desc[e] == desc[s]:
            e += 1
        places.extend(range(s, e, max(1, min(grain, budget // desc[s], cap))))
        s = e
    return [*places, n]
