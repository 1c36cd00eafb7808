"""``curate_triplets``: MultiCSR stage 2, self-curation (§3.2, Eq. 3-4, App. A).

The LLM that generated the triplets scores each hypothesis against its premise with App. A's "Measuring
Similarity Prompt" (plain greedy decoding: "the same generation procedure of Equation 1"), and a rule of
:mod:`embench.generate.rules` keeps or drops each triplet. Beside the kept CSV (``sent0,sent1,hard_neg``,
ready for ``embench train``):

* ``<out stem>.scores.csv``: every triplet with both answers, both scores and the decision; scores are
  written row by row, so a rerun (or another ``--rule``) reuses them and scores only what is missing;
* ``<out stem>.summary.json`` and ``.md``: kept and dropped counts by reason, the score distribution;
* ``<out stem>.scores.png`` (and ``.pdf``): the (a, b) grid with the kept region, and both histograms.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.atomic import write_json, write_output
from ..core.boundary import python_api
from ..core.errors import EmbenchError
from .appended import complete_rows, rewrite_rows
from .decoding import DecodeSettings, decode
from .prompts import SCORING, render, uses_chat
from .rules import RULES, Decision, decide, parse_score

log = logging.getLogger(__name__)
SCORE_HEADER = ("index", "sent0", "sent1", "hard_neg", "answer_entailment", "answer_contradiction")


@dataclass
class CurationResult:
    out: Path
    total: int
    kept: int
    dropped: dict[str, int]
    seconds: float  # scoring time of this run
    files: list[Path] = field(default_factory=list)
    frame: Any = None  # pandas: every triplet with answers, scores and decision


def _paths(out: Path) -> dict[str, Path]:
    stem = out.name[:-4] if out.name.endswith(".csv") else out.name
    return {"scores": out.with_name(stem + ".scores.csv"), "summary": out.with_name(stem + ".summary.json"),
            "markdown": out.with_name(stem + ".summary.md"), "figure_dir": out.parent, "figure_stem": stem + ".scores"}


def _scored(path: Path, triplets: list[tuple[str, str, str]], flag: str = "--scores") -> dict[int, tuple[str, str]]:
    """Answers already in the scores file, for the rows that are still the same triplet."""
    if not path.is_file():
        return {}
    done: dict[int, tuple[str, str]] = {}
    rows, cut = complete_rows(path)  # a last row cut short by a kill, whatever its fields, is scored again
    if (rows and tuple(rows[0]) != SCORE_HEADER) or (not rows and not cut):  # a header cut short: a file begun again
        raise EmbenchError(f"{flag} {path}: not a scores file of 'embench generate curate'; give another {flag}")
    for row in rows[1:]:
        if len(row) != len(SCORE_HEADER) or not row[0].isdigit():
            continue  # not a row this command writes: its triplet is scored again
        i = int(row[0])
        if i < len(triplets) and tuple(row[1:4]) == triplets[i]:
            done[i] = (row[4], row[5])
    return done


@python_api("curate_triplets")  # its errors say rule=, out=, not the command line's --rule, --out
def curate_triplets(llm: str, triplets: str | os.PathLike, out: str | os.PathLike | None = None, *, rule: str = "paper",
                    alpha: float = 3.0, beta: float = 3.0, gamma: float | None = None, limit: int | None = None,
                    chat: bool | None = None, max_new_tokens: int = 8, batch_size: int = 16, device: str | None = None,
                    answer_prefix: str = "", scores: str | os.PathLike | None = None, progress: bool = False) -> CurationResult:
    """Score every triplet of ``triplets`` with ``llm`` and keep those ``rule`` accepts (see the module doc).

    ``answer_prefix`` is put at the start of the model's answer (after the chat template's assistant turn),
    e.g. ``"Score:"``: embench's addition, not the paper's, for small models that restate the sentences
    instead of giving a number; the scores file and summary record it. ``scores`` names the answers file
    (default ``<out stem>.scores.csv``): another rule's run given the same file asks the LLM nothing again.
    """
    if rule not in RULES:
        raise EmbenchError(f"--rule must be one of {', '.join(RULES)}, got {rule!r}")
    for flag, n in (("--batch-size", batch_size), ("--max-new-tokens", max_new_tokens)):
        if n < 1:
            raise EmbenchError(f"{flag} must be at least 1, got {n}")
    for flag, line in (("--alpha", alpha), ("--beta", beta)):  # the LLM's scores are read on 0-5 (rules.py)
        if not 0 <= line <= 5:
            raise EmbenchError(f"{flag} {line} is outside the scores' 0-5 scale")
    if gamma is not None and rule == "code":  # it was ignored without a word
        raise EmbenchError("--gamma is the paper rule's margin; the code rule (the authors' filter) has none: leave it out")
    gamma = 1.0 if gamma is None else gamma  # the paper's main results (Table 6)
    if not 0 <= gamma <= 5:
        raise EmbenchError(f"--gamma {gamma} is not a margin between two 0-5 scores (0 to 5)")
    src = Path(triplets)
    from ..data.training_sets import read_triplets_csv

    # a generation may be empty: it is dropped by the rule, never scored
    rows = read_triplets_csv(src, allow_empty=True)[:limit or None]
    out = Path(out) if out is not None else src.with_name((src.name[:-4] if src.name.endswith(".csv") else src.name) + ".kept.csv")
    if out.resolve() == src.resolve():
        raise EmbenchError(f"--out {out} is the triplet file itself: give another --out")
    if out.is_dir():
        raise EmbenchError(f"--out {out} is a folder; give the CSV file of the kept triplets")
    paths = _paths(out)
    if scores is not None:
        paths["scores"] = Path(scores)
    scores_flag = "--scores" if scores is not None else "--out"  # which option named the answers file
    if paths["scores"].is_dir():
        raise EmbenchError(f"{scores_flag} {paths['scores']} is a folder; give the answers CSV file")
    answers = _scored(paths["scores"], rows, scores_flag)  # first: a file that is no scores file gets no settings file
    _check_scoring_settings(paths["scores"], str(llm), {"chat": chat, "max_new_tokens": max_new_tokens,
                                                        "answer_prefix": answer_prefix, "prompt": SCORING}, scores_flag)
    seconds = _score_missing(llm, rows, answers, paths["scores"], chat, max_new_tokens, batch_size, device, progress,
                             answer_prefix)
    frame = _decisions(rows, answers, rule, alpha, beta, gamma)
    kept = frame[frame["kept"]]
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["sent0", "sent1", "hard_neg"])
    for r in kept.itertuples():
        w.writerow([r.sent0, r.hard_neg, r.sent1] if r.swapped else [r.sent0, r.sent1, r.hard_neg])
    write_output(out, buf.getvalue(), "--out")  # whole or not at all: a full disk keeps the previous file
    dropped = dict(Counter(frame.loc[~frame["kept"], "reason"]).most_common())
    settings = {"llm": str(llm), "triplets": str(src), "rule": rule, "alpha": alpha, "beta": beta,
                "gamma": gamma if rule == "paper" else None, "prompt": SCORING, "answer_prefix": answer_prefix,
                "max_new_tokens": max_new_tokens}
    files = [out, paths["scores"], *_summary(frame, settings, dropped, paths, seconds)]
    files += _figure(frame, rule, alpha, beta, gamma, paths["figure_dir"], paths["figure_stem"])
    return CurationResult(out, len(frame), int(frame["kept"].sum()), dropped, seconds, files, frame)


def _check_scoring_settings(scores: Path, llm: str, settings: dict[str, Any], flag: str = "--out") -> None:
    """Answers in an existing scores file are reused only when they were asked the same way, of the same model: one
    with the same weights (``llm_fingerprint``), however its path is spelled or wherever a symlink to it points."""
    from ..models.language_model import language_model_fingerprint

    meta = scores.with_name(scores.name + ".json")
    fingerprint = language_model_fingerprint(llm)
    if scores.is_file() and meta.is_file():
        before = json.loads(meta.read_text(encoding="utf-8"))
        differ = [k for k in settings if before.get(k) != settings[k]]
        if not _same_model(before, llm, fingerprint):
            differ.insert(0, "llm")
        if differ:
            raise EmbenchError(f"{scores} holds answers asked with other settings ({', '.join(differ)}): remove it, or "
                               f"give another {flag}")  # the option that named the answers file
    scores.parent.mkdir(parents=True, exist_ok=True)
    write_json(meta, {"llm": llm, **({"llm_fingerprint": fingerprint} if fingerprint else {}), **settings}, default=None)


def _same_model(before: dict[str, Any], llm: str, fingerprint: str | None) -> bool:
    """Whether the answers of a scores file (its settings ``before``) were asked of the model ``llm``: by the weights
    where both are known. A file written before the weights were kept names the model by its path as typed: it is
    the same model where that path holds the same weights now (then the file is rewritten with them), else where
    the names are equal, as it was read before; so is a model that cannot be found now (nothing to follow)."""
    from ..models.language_model import language_model_fingerprint

    kept = before.get("llm_fingerprint")
    if kept and fingerprint:
        return kept == fingerprint
    if not kept and fingerprint and isinstance(before.get("llm"), str) and before["llm"] != llm:
        then = language_model_fingerprint(before["llm"])
        if then is not None:
            return then == fingerprint
    return before.get("llm") == llm


def _score_missing(llm: str, rows: list[tuple[str, str, str]], answers: dict[int, tuple[str, str]], path: Path,
                   chat: bool | None, max_new_tokens: int, batch_size: int, device: str | None, progress: bool,
                   answer_prefix: str = "") -> float:
    """Ask the LLM for every missing (premise, hypothesis) score; answers appended to ``path`` row by row."""
    todo = [i for i in range(len(rows)) if i not in answers and all(x.strip() for x in rows[i])]
    if not todo:
        return 0.0
    from ..models.language_model import load_language_model
    from ..report.progress import RateProgress

    lm = load_language_model(llm, device=device)
    settings = DecodeSettings(max_new_tokens=max_new_tokens, omega=0.0)
    if path.is_file():
        kept, cut = complete_rows(path)
        if cut:  # a row cut short by a kill (unread by _scored) goes, rather than stay a row of its own to be read later
            rewrite_rows(path, kept, "the scores file")
    new = not path.is_file() or path.stat().st_size == 0
    started = time.perf_counter()
    with open(path, "a", encoding="utf-8", newline="") as f, \
            RateProgress(progress, "scoring", Path(str(llm)).name, len(rows), "triplets", completed=len(rows) - len(todo)) as bar:
        w = csv.writer(f, lineterminator="\n")
        if new:
            w.writerow(SCORE_HEADER)
        for start in range(0, len(todo), batch_size):
            chunk = todo[start : start + batch_size]
            prompts = [render(lm.tokenizer, SCORING.format(premise=rows[i][0], hypothesis=rows[i][k]), chat) + answer_prefix
                       for k in (1, 2) for i in chunk]
            special = lm.kind == "seq2seq" or not uses_chat(lm.tokenizer, chat)
            ids, _ = decode(lm.model, lm.kind, lm.tokenizer, prompts, None, settings, None, special)
            texts = [lm.tokenizer.decode(x, skip_special_tokens=True).strip() for x in ids]
            n = len(chunk)
            for j, i in enumerate(chunk):
                answers[i] = (texts[j], texts[n + j])
                w.writerow([i, *rows[i], texts[j], texts[n + j]])
                f.flush()
            bar.advance(n)
    return time.perf_counter() - started


def _decisions(rows: list[tuple[str, str, str]], answers: dict[int, tuple[str, str]], rule: str, alpha: float,
               beta: float, gamma: float):
    import pandas as pd

    records = []
    for i, (s0, s1, s2) in enumerate(rows):
        ans_a, ans_b = answers.get(i, ("", ""))
        a, why_a = parse_score(ans_a)
        b, why_b = parse_score(ans_b)
        if not all(x.strip() for x in (s0, s1, s2)):
            d = Decision(False, "empty sentence (nothing generated)")
            a = b = None
        else:
            d = decide(rule, a, b, alpha, beta, gamma, why_a, why_b)
        records.append({"index": i, "sent0": s0, "sent1": s1, "hard_neg": s2, "answer_entailment": ans_a,
                        "answer_contradiction": ans_b, "a": a, "b": b, "kept": d.kept, "swapped": d.swapped,
                        "reason": d.reason})
    return pd.DataFrame(records)


def _summary(frame, settings: dict[str, Any], dropped: dict[str, int], paths: dict[str, Path], seconds: float) -> list[Path]:
    a, b = frame["a"].dropna(), frame["b"].dropna()
    summary = {"settings": settings, "total": len(frame), "kept": int(frame["kept"].sum()),
               "swapped": int(frame["swapped"].sum()), "dropped": dropped, "scoring_seconds_this_run": seconds,
               "scores": {"entailment": {str(k): int(v) for k, v in a.value_counts().sort_index().items()},
                          "contradiction": {str(k): int(v) for k, v in b.value_counts().sort_index().items()},
                          "mean_entailment": float(a.mean()) if len(a) else None,
                          "mean_contradiction": float(b.mean()) if len(b) else None}}
    write_json(paths["summary"], summary, default=None)
    lines = [f"# Self-curation ({settings['rule']} rule)", "",
             f"{summary['kept']} of {summary['total']} triplets kept"
             + (f" ({summary['swapped']} with roles swapped)" if summary["swapped"] else "") + ".", "",
             "| reason | triplets |", "|---|---:|", f"| kept | {summary['kept']} |"]
    lines += [f"| dropped: {k} | {v} |" for k, v in dropped.items()]
    lines += ["", "| score | entailment (a) | contradiction (b) |", "|---:|---:|---:|"]
    values = sorted(set(a) | set(b))
    lines += [f"| {v:g} | {int((a == v).sum())} | {int((b == v).sum())} |" for v in values]
    write_output(paths["markdown"], "\n".join(lines) + "\n")
    return [paths["summary"], paths["markdown"]]


def _figure(frame, rule: str, alpha: float, beta: float, gamma: float, out: Path, stem: str) -> list[Path]:
    """Left: the (a, b) pairs (jittered counts) with the region the rule keeps; right: both histograms."""
    import numpy as np

    from ..report import style

    scored = frame.dropna(subset=["a", "b"])
    with style.paper_style():
        fig, axes = style.figure(ncols=2, width=6.4)
        ax = axes[0, 0]
        grid = np.linspace(0, 5, 201)
        aa, bb = np.meshgrid(grid, grid)
        if rule == "paper":
            region = (aa >= alpha) & (bb <= beta) & (aa >= bb + gamma)
        else:
            region = (aa != bb) & (((aa <= beta) & (bb >= alpha)) | ((bb <= beta) & (aa >= alpha)))
        ax.contourf(aa, bb, region.astype(float), levels=[0.5, 1.5], colors=["#f4a261"], alpha=0.35)
        counts = scored.groupby(["a", "b"]).size()
        if len(counts):
            kept_at = scored.groupby(["a", "b"])["kept"].any()
            xs, ys = zip(*counts.index, strict=True)
            sizes = 20 + 220 * np.asarray(counts.values) / counts.values.max()  # area by count, the largest bounded
            ax.scatter(xs, ys, s=sizes, c=["#2a9d8f" if kept_at[k] else "#6c757d" for k in counts.index], alpha=0.8,
                       edgecolors="none", clip_on=False)
            for (x, y), n in counts.items():
                ax.annotate(str(n), (x, y), textcoords="offset points", xytext=(0, -12), ha="center", fontsize="x-small")
        ax.set_xlim(-0.2, 5.2)
        ax.set_ylim(-0.2, 5.2)
        ax.set_xlabel("a: score(premise, entailment)")
        ax.set_ylabel("b: score(premise, contradiction)")
        ax.set_title(f"{rule} rule: {int(frame['kept'].sum())}/{len(frame)} kept")
        ax = axes[0, 1]
        bins = np.arange(-0.25, 5.5, 0.5)
        ax.hist([scored["a"], scored["b"]], bins=bins, label=["entailment (a)", "contradiction (b)"],
                color=["#2a9d8f", "#e76f51"])
        ax.set_xlabel("LLM similarity score")
        ax.set_ylabel("pairs")
        ax.legend(frameon=False)
        fig.tight_layout()
        return style.save(fig, out, stem)
