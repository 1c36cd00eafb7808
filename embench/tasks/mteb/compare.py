"""How the data root's copy of an mteb task compares with MTEB's own: counts and mteb's statistics."""

from __future__ import annotations

from typing import Any


def compare_counts(local: dict[str, int], published: dict | None, eval_split: str) -> list[str]:
    """Differences between the local counts and the descriptive statistics mteb ships for the task."""
    if not published or eval_split not in published:
        return []
    stats = published[eval_split]
    diffs = []
    for key, value in local.items():
        if key.startswith("train_"):
            ref = (published.get("train") or {}).get(key.removeprefix("train_"))
            label = f"train {key.removeprefix('train_')}"
        else:
            ref, label = stats.get(key), f"{eval_split} {key}"
        if isinstance(ref, int) and ref != value:
            diffs.append(f"{label}: {value:,} here vs {ref:,} in MTEB's copy")
    return diffs


def _leaves(d: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_leaves(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(d, (int, float)) and not isinstance(d, bool):
        out[prefix] = d
    return out


def compare_statistics(mteb_task: Any, published: dict | None, eval_split: str) -> list[str]:
    """mteb's own descriptive statistics of the loaded local data against those it ships for the task.

    Every integer statistic that differs is named (sample, document, query, pair and relevant-doc
    counts, characters per text field, unique texts; not ``unique_pairs``, whose definition changed
    between mteb versions: :func:`compare_counts` checks it the shipped way); class sizes are compared as a multiset, so a
    copy that numbers its labels differently but has the same classes says only that.
    """
    if not published or eval_split not in published:
        return []
    try:
        subset = "default" if "default" in mteb_task.dataset else None
        local = mteb_task._calculate_descriptive_statistics_from_split(eval_split, hf_subset=subset)
    except Exception as e:  # a task type whose statistics mteb cannot compute on this copy
        return [f"mteb could not compute its statistics on the local copy ({type(e).__name__}); counts not compared"]
    here, ref = _leaves(local), _leaves(published[eval_split])
    out = []
    labels_here = sorted(v for k, v in here.items() if k.startswith("label_statistics.labels.") and k.endswith(".count"))
    labels_ref = sorted(v for k, v in ref.items() if k.startswith("label_statistics.labels.") and k.endswith(".count"))
    for key, value in ref.items():
        if key.startswith("label_statistics.labels.") or not isinstance(value, int) or isinstance(value, bool):
            continue
        if key.endswith("unique_pairs"):  # counted symmetrically by this mteb, not by the one that made the shipped stats
            continue
        mine = here.get(key)
        if isinstance(mine, (int, float)) and mine != value:
            out.append(f"{eval_split} {key.replace('_statistics.', ' ')}: {int(mine):,} here vs {value:,} in MTEB's copy")
    if labels_ref and labels_here != labels_ref:
        out.append(f"{eval_split} class sizes differ from MTEB's copy ({len(labels_here)} classes here, {len(labels_ref)} there)")
    elif labels_ref:
        same_ids = all(here.get(k) == v for k, v in ref.items() if k.startswith("label_statistics.labels.") and k.endswith(".count"))
        if not same_ids:
            out.append(f"{eval_split} label ids are numbered differently from MTEB's copy (same class sizes)")
    return out


def published_stats(mteb_task: Any) -> dict | None:
    try:
        return mteb_task.metadata.descriptive_stats
    except Exception:  # a task without shipped statistics
        return None
