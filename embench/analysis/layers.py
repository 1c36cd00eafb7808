"""The same measures for every hidden layer (cropping paper Figure 4b-c, Figures S2-S3).

Layer 0 is the embedding output, layer L the last transformer layer, as in the authors' code
(``hidden_states[layer]``). Each layer is pooled with mean pooling unless ``--pooling`` says
otherwise (the cropping paper's representation). Every layer is a view of one loaded model, and
all of them come from ONE forward pass per batch (:func:`embench.encoding.engine.fill_views`),
each stored in the embedding cache under its own key (``embench run --layer N`` finds it).
Measures per layer:

* STS-B Spearman of cosine similarities (``split``, default test);
* kNN accuracy (k = 10, Euclidean, raw by default; see :mod:`embench.analysis.knn`) on ``dataset``, the
  ``knn_k``, ``knn_metric`` and ``knn_transform`` columns (and the figure's label) saying which;
* optionally a suite's score per layer (``suite``, e.g. ``mteb-lite``) through
  :func:`embench.api.evaluate`, whose texts are encoded for every layer in the same single pass (the
  tasks then read each layer's vectors from the embedding cache): for MTEB tasks the cropping
  paper's block average (the mean of the task-type means,
  :func:`embench.tasks.mteb.blocks.block_averages`), for other suites the plain mean of the main
  scores. Figure 4c of the cropping paper uses non-normalised embeddings, and so do the layer
  encoders here: a model whose pipeline ends in an L2 normalisation is read before it unless
  ``--normalize`` is given (the ``normalized`` column says which).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from ..core.errors import EmbenchError
from ..report.per_layer import Measure, per_layer_figure
from .base import AnalysisResult, analysis
from .cosine_density import cosines
from .inputs import is_normalised, stsb, unique, write_csv
from .knn import check_split, knn_accuracy, load_labelled


def layer_list(text: str) -> list[int]:
    """``"0,3,-1"`` as layer numbers; anything else is an error naming ``--layers`` (checked before a model loads)."""
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out:
        raise EmbenchError(f"--layers {text!r}: give layer numbers separated by commas (e.g. 0,3,6; -1 is the last) "
                           "or 'all'")
    return out


def parse_layers(layers, num_layers: int, label: str | None = None) -> list[int]:
    """``None``/``"all"`` -> 0..L; else a list (or "0,2,4") of layer numbers, negatives from the end."""
    if layers is None or layers == "all":
        return list(range(num_layers + 1))
    if isinstance(layers, int):
        layers = [layers]
    if isinstance(layers, str):
        layers = layer_list(layers)
    out = []
    for layer in layers:
        n = int(layer) + (num_layers + 1 if int(layer) < 0 else 0)
        if not 0 <= n <= num_layers:
            whose = f" for {label}" if label else ""
            raise EmbenchError(f"--layers {layer} is out of range{whose}: the model has layers 0 (embedding output) to {num_layers}")
        out.append(n)
    return sorted(set(out))


def layers_of_every_model(refs, layers) -> list[list[int]]:
    """Each model's layers, every one checked before any model encodes: a layer only the first model has was
    an error after that model's pass over every layer (a model is loaded once; its encoder is kept for the pass)."""
    return [parse_layers(layers, ref.encoder().num_layers, ref.label) for ref in refs]


@analysis("layers")
def layers(refs, ctx, out, layers=None, dataset: str | None = "banking77", limit: int | None = 5000, k: int = 10,
           metric: str = "euclidean", transform: str = "raw", seed: int = 42, split: str = "test", text: str = "senteval",
           suite: str | None = None, stratify: bool = True) -> AnalysisResult:
    """STS-B Spearman, kNN accuracy and (optionally) a suite average for each hidden layer of each model."""
    if isinstance(suite, (list, tuple)):  # "--suite A,B" arrives as a list of task names
        suite = ",".join(suite) + ("," if len(suite) == 1 else "")
    if suite:
        _suite_spec(suite)  # an unknown suite or task fails here, before anything is encoded
        if ctx.cache_dir is None:
            warnings.warn(f"--suite {suite} without an embedding cache: its tasks encode their texts again for every "
                          "layer (with the cache they read the vectors of the shared pass)", stacklevel=2)
    pairs = stsb(ctx.root, split, text)
    sentences = unique(pairs.left + pairs.right)
    labelled = load_labelled(dataset, ctx.root, limit=limit, seed=seed) if dataset else None
    if labelled is not None:  # a subset too small to split (or for k) is said now, not after the pass over every layer
        check_split(labelled.labels, k, 0.1, seed, stratify, name=labelled.name)
    extra = suite_texts(suite, ctx) if suite else []
    rows = []
    for ref, chosen in zip(refs, layers_of_every_model(refs, layers), strict=True):
        overrides = {} if ref.options.get("pooling") else {"pooling": "mean"}
        encoders = [ref.unnormalised(layer=layer, **overrides) for layer in chosen]  # Figure 4b-c: non-normalised
        # Every layer from ONE forward pass per batch over the STS-B, kNN and suite texts together.
        texts = unique(sentences + (labelled.texts if labelled is not None else []) + extra)
        ctx.fill_views(encoders, texts)
        for layer, enc in zip(chosen, encoders, strict=True):
            row = {"model": ref.label, "layer": layer, "pooling": enc.pooling, "normalized": is_normalised(enc)}
            emb = dict(zip(texts, ctx.embed(enc, texts), strict=True))  # this layer's array only, from memory
            row["stsb_spearman"] = stsb_spearman(emb, pairs)
            if labelled is not None:
                r = knn_accuracy(np.stack([emb[t] for t in labelled.texts]), labelled.labels, k=k, metric=metric,
                                 transform=transform, seed=seed, stratify=stratify)
                row.update({"knn_dataset": labelled.name, "knn_accuracy": r["accuracy"], "knn_stderr": r["stderr"], "knn_n_test": r["n_test"],
                            # after the existing columns (kept as they were): runs of another k, metric or transform differ here
                            "knn_k": k, "knn_metric": metric, "knn_transform": transform})
            rows.append(with_suite_average(row, enc, suite, ctx, out))
    frame = pd.DataFrame(rows)
    files = [write_csv(frame, out, "layers")]
    measures = [Measure("stsb_spearman", f"STS-B {split} Spearman (x100)")]
    if labelled is not None:
        measures.append(Measure("knn_accuracy", f"{k}-NN accuracy on {labelled.name}, {metric}, {transform} (%)", "knn_stderr"))
    if suite:
        _, tasks, column, is_mteb = _suite_spec(suite)
        what = "MTEB tasks" if tasks else suite
        measures.append(Measure(column, f"{what} {'block average' if is_mteb else 'average'} (x100)"))
    files += per_layer_figure(frame, measures, out, "layers", xlabel="layer (0 = embedding output)", scale=100)
    return AnalysisResult("layers", {"layers": frame}, files)


def stsb_spearman(emb: dict[str, np.ndarray], pairs) -> float:
    """Spearman correlation of the STS-B pairs' cosines (vectors from ``emb``) with their gold scores;
    NaN when every cosine is the same (a view that maps every text to one vector ranks nothing)."""
    cos = cosines(np.stack([emb[s] for s in pairs.left]), np.stack([emb[s] for s in pairs.right]))
    return float(spearmanr(cos, pairs.gold)[0]) if np.ptp(cos) > 0 else float("nan")


def with_suite_average(row: dict, enc, suite: str | None, ctx, out) -> dict:
    """``row`` with the view's suite average (when a ``suite`` is asked for); then the view's vectors leave
    memory, before the next view's tasks run."""
    if suite:
        row[_suite_spec(suite)[2]] = _suite_average(enc, suite, ctx, out)
    ctx.release(enc)
    return row


def _suite_spec(suite: str) -> tuple[str | None, list[str] | None, str, bool]:
    """(suite name or None, task list or None, column name, whether every task is an MTEB task)."""
    from ..tasks.names import resolve_tasks

    names = [t.strip() for t in suite.split(",") if t.strip()]
    if "," in suite:
        tasks = resolve_tasks(None, names)[0]
        return None, tasks, "tasks_average", all(t.startswith("MTEB:") for t in tasks)
    tasks = resolve_tasks(suite, None)[0]
    return suite, None, f"{suite}_average", all(t.startswith("MTEB:") for t in tasks)


def suite_texts(suite: str, ctx) -> list[str]:
    """Every text the suite's tasks encode, under the suite's protocol (so the shared pass fills the cache they read)."""
    from ..evaluation.protocols import EvalProtocol
    from ..evaluation.suites import SUITES
    from ..tasks import TASKS
    from ..tasks.names import resolve_tasks
    from ..tasks.recorded_protocol import seeded_protocol

    name, tasks, _, _ = _suite_spec(suite)
    names = resolve_tasks(name, tasks)[0]
    given = SUITES.get(name).protocol if name else {}
    protocol = EvalProtocol.from_options(**given)
    texts: list[str] = []
    for t in names:  # under the seed evaluate() runs it with (an MTEB task's own where none is given)
        texts += list(TASKS.get(t).prepare(ctx.root, seeded_protocol(TASKS.get(t), protocol, "seed" in given)).texts)
    return unique(texts)


def _suite_average(encoder, suite: str, ctx, out) -> float:
    from ..api import evaluate

    suite_name, tasks, _, _ = _suite_spec(suite)
    ev = evaluate(encoder, suite_name, tasks=tasks, data=ctx.root.path, results_dir=out / "results", cache_dir=ctx.cache_dir,
                  use_cache=ctx.cache_dir is not None, batch_size=ctx.batch_size)
    if ev.records and all((r.scores or {}).get("mteb_type") for r in ev.records):
        from ..tasks.mteb.blocks import block_averages

        return float(block_averages(ev.records)["Block avg."].iloc[0])
    scores = [r.main_score for r in ev.records]
    return float(np.mean(scores)) if scores else float("nan")
