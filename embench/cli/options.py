"""The options several commands share, each declared once: its spelling, type and help.

Commands take the model, encoding and storage ones through
:func:`embench.cli.option_groups.shared_options` and the protocol axes through
:func:`embench.cli.option_groups.protocol_options`.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from ..core.defaults import SEED_MAX
from ..report.formats import FORMATS

# models.encoder.DTYPES holds these names with their torch types; importing it here would import torch
# with every command (tests/test_cli_options.py checks that the two agree).
DTYPE_NAMES = ("fp32", "bf16", "fp16")
# encoding.quantize.PRECISIONS, sentence-transformers' names (the same test checks that the two agree)
PRECISION_NAMES = ("float32", "int8", "uint8", "binary", "ubinary")


def choice_enum(name: str, values: tuple[str, ...]) -> type[Enum]:
    """A ``str`` Enum of ``values``, the type typer needs to offer and check choices."""
    return Enum(name, [(v, v) for v in values], type=str)  # type: ignore[return-value]


def value(x: Any) -> Any:
    """The plain value of an Enum choice, or of each in a list of them (None and other values pass through)."""
    if isinstance(x, list):
        return [value(v) for v in x]
    return x.value if isinstance(x, Enum) else x


Fmt = choice_enum("Fmt", FORMATS)
DType = choice_enum("DType", DTYPE_NAMES)
Precision = choice_enum("Precision", PRECISION_NAMES)

ModelsOpt = Annotated[list[str], typer.Option("--model", "-m", help="Model name, alias or folder; repeat for several.")]
DataOpt = Annotated[Path | None, typer.Option("--data", help="Data root (default: $EMBENCH_DATA, then ~/.cache/embench/data).")]
ResultsOpt = Annotated[Path | None, typer.Option("--results-dir", help="Where result records go (default: $EMBENCH_RESULTS, then ./results).")]


def cli_results(path: Path | None) -> Path:
    """--results-dir, else the command line's default ($EMBENCH_RESULTS, then ./results; the API's differs)."""
    from ..evaluation.results import default_results_dir

    return path if path is not None else default_results_dir(cli=True)
CacheDirOpt = Annotated[Path | None, typer.Option("--cache-dir", help="Embedding cache (default: $EMBENCH_CACHE, then ~/.cache/embench/embeddings).")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the embedding cache.")]
FmtOpt = Annotated[Fmt, typer.Option("--format", "-f", help="Output format on stdout.")]
DTypeOpt = Annotated[DType | None, typer.Option(help="Inference precision (bf16/fp16: weights held in it on a GPU, autocast on a CPU; default: the model family's, fp32 on CPUs).")]
DeviceOpt = Annotated[str | None, typer.Option(
    help="cpu, cuda, cuda:1, ... (default: CUDA when present); run, compare, mteb, analyze and audit also take several, "
         "cuda:0,cuda:1 or all: the texts are split over one process per device, which fill the embedding cache.")]
BatchSizeOpt = Annotated[int | None, typer.Option(
    help="Texts per batch at most (default: 128 on a CPU, 32 for the per-token analyses; none on a GPU, where --batch-tokens "
         "cuts batches).")]
CompileOpt = Annotated[bool, typer.Option(
    "--compile", help="Run each transformer layer through torch.compile, compiled once for all layers (GPUs; pays when "
                      "a pass is long enough to repay the compilation, which takes seconds to a minute).")]
CudaGraphsOpt = Annotated[bool, typer.Option(
    "--cuda-graphs", help="Replay each batch's forward pass as a CUDA graph, batches padded to a few bucketed shapes "
                          "(GPUs; the same vectors; for small, host-bound encoders; elsewhere no effect).")]
UnpaddedOpt = Annotated[bool, typer.Option(
    "--unpadded", help="Run each batch as one row of its real tokens, with variable-length flash attention (GPUs in "
                       "bf16/fp16; BERT, RoBERTa, Llama, Qwen2/3, Mistral; the same vectors up to rounding; elsewhere a "
                       "warning and padded batches).")]
BatchTokensOpt = Annotated[int | None, typer.Option(
    help="Padded tokens per batch at most (texts x longest text); default: none on a CPU, 65536 on a GPU; "
                "0: cut batches by --batch-size alone.")]
NormalizeOpt = Annotated[bool | None, typer.Option("--normalize/--no-normalize", help="L2-normalise embeddings (default: the model's own; analyze knn, layers and tsne: not normalised, as the cropping paper reads them).")]
PoolingOpt = Annotated[str | None, typer.Option(help="Pooler (embench list poolers); default: the model's own (analyze layers: mean).")]
LayerOpt = Annotated[int | None, typer.Option(help="Hidden layer to pool (0 = embedding output; default last).")]
MaxLengthOpt = Annotated[int | None, typer.Option(help="Maximum tokens per text (default: the model's).")]
OverwriteOpt = Annotated[bool, typer.Option(help="Recompute tasks that already have a stored record.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress output on stderr.")]
CIOpt = Annotated[float | None, typer.Option("--ci", help="Add a bootstrap confidence interval at this level (95 or 0.95: below 1 a fraction, from 1 to 100 a percentage) to every score and Avg.; from stored per-item outcomes, no encoding.")]
ResamplesOpt = Annotated[int | None, typer.Option("--resamples", help="Bootstrap resamples for intervals and paired tests (default 1000).")]
CISeedOpt = Annotated[int | None, typer.Option("--ci-seed", help="Seed of the bootstrap (default: the protocol's seed, 1111).",
                                               min=0, max=SEED_MAX)]
PromptOpt = Annotated[str | None, typer.Option(
    "--prompt",
    help='Template wrapped around every text before encoding, with {text} where the text goes, e.g. '
         '\'This sentence: "{text}" means in one word:"\', or a named one: bellm, bellm-code, bellm-eval, prompteol, none '
         '(part of the cache key and the record).',
)]

BidirectionalOpt = Annotated[int | None, typer.Option(
    "--bidirectional-last", min=0,
    help="Decoder LLMs: the last K layers attend in both directions, as --bidirectional-mode reads it (BeLLM; "
         "0 = causal, the number of layers = fully bidirectional). Part of the cache key and the record.",
)]
BidirectionalModeOpt = Annotated[str | None, typer.Option(
    "--bidirectional-mode",
    help="How --bidirectional-last K is read: sum (default; BeLLM's Eq. 5: the causal model plus the last K layers "
         "run again without the causal mask on the embeddings, summed before the final norm), sum-code (the authors' "
         "AnglE code: causal layers 1..n-K plus that branch, padding unmasked), mask (one stack, the causal mask "
         "removed in the last K, padding masked: a no-op for last-token pooling when K = 1) or billm (one stack, "
         "padding unmasked too: the billm package). A checkpoint trained with K keeps its mode. Part of the cache "
         "key and the record.",
)]
AdapterOpt = Annotated[Path | None, typer.Option(
    "--adapter", help="A LoRA adapter folder (embench train --method bellm) to put on --model, which must be its base.")]
RevisionOpt = Annotated[str | None, typer.Option(
    "--revision", help="Hub revision of --model: a commit, branch or tag (default: the catalogue's pinned commit for a "
                       "known model, embench list models; else the hub's default branch). In the record and the cache key.")]
PromptNameOpt = Annotated[str | None, typer.Option(
    "--prompt-name", help="One of the model's own prompts (config_sentence_transformers.json 'prompts', or its catalogue "
                          "row), e.g. query, for every text; default: the model's default prompt, and in retrieval "
                          "tasks its query and document prompts per side. In the record and the cache key.")]
# what a task file is, said once; each command that takes one adds what it does with it (run: runs it, list: lists it)
TASK_FILE_HELP = ("A task on your own data: a YAML or TOML file naming its kind (pairs, classification, "
                  "pair-classification), files per split, format and columns; repeatable.")
TaskFileOpt = Annotated[list[Path] | None, typer.Option(
    "--task-file", help=TASK_FILE_HELP + " Its task runs (after the suite's) unless --task names the tasks to run.")]
TruncateDimOpt = Annotated[list[int] | None, typer.Option(
    "--truncate-dim", help="Matryoshka: score the first N dimensions of every vector (sentence-transformers' "
                           "truncate_dim); repeatable, one row per dimension from one encoding pass (compare: one "
                           "value, a paired test compares one configuration of each model; audit: the "
                           "dimensions its truncate-dim knob and figure sweep). In the record's key; the cache keeps "
                           "the full vectors.")]
QuantizeOpt = Annotated[list[Precision] | None, typer.Option(  # type: ignore[valid-type]
    "--quantize", help="Score the vectors quantised as sentence-transformers' quantize_embeddings does (int8/uint8 "
                       "calibrated on the task's own texts, both sides of every pair, as its EmbeddingSimilarityEvaluator; "
                       "binary/ubinary: sign bits); float32: only re-normalised. Repeatable, one row each (compare: one value; "
                       "audit: the precisions its quantize knob and figure sweep). In the record's key.")]
