"""The model, encoding and storage options every model-loading command takes, declared once.

``run``, ``mteb run``, ``compare``, ``analyze``, ``audit`` and ``grid`` each take a subset of the same
options. Rather than list them parameter by parameter in each command (where their help texts and
defaults drifted apart), a command names the ones it takes with :func:`shared_options` and declares one
``opts`` parameter; it receives a :class:`Given` of the values, which :meth:`Given.api` turns into the
Python API's keyword arguments. :func:`~embench.cli.options.protocol_options` adds the protocol axes the
same way (both rewrite the command's signature through :func:`replace_parameter`, which typer reads).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer

from ..evaluation.protocols import CHOICES
from . import options as o

# parameter name -> (its typer annotation, its default); the option spellings and help live in options.py
SHARED: dict[str, tuple[Any, Any]] = {
    "normalize": (o.NormalizeOpt, None),
    "pooling": (o.PoolingOpt, None),
    "layer": (o.LayerOpt, None),
    "max_length": (o.MaxLengthOpt, None),
    "prompt": (o.PromptOpt, None),
    "bidirectional_last": (o.BidirectionalOpt, None),
    "bidirectional_mode": (o.BidirectionalModeOpt, None),
    "adapter": (o.AdapterOpt, None),
    "revision": (o.RevisionOpt, None),
    "prompt_name": (o.PromptNameOpt, None),
    "dtype": (o.DTypeOpt, None),
    "device": (o.DeviceOpt, None),
    "batch_size": (o.BatchSizeOpt, None),
    "batch_tokens": (o.BatchTokensOpt, None),
    "compile_model": (o.CompileOpt, False),
    "cuda_graphs": (o.CudaGraphsOpt, False),
    "unpadded": (o.UnpaddedOpt, False),
    "data": (o.DataOpt, None),
    "results_dir": (o.ResultsOpt, None),
    "cache_dir": (o.CacheDirOpt, None),
    "no_cache": (o.NoCacheOpt, False),
    "task_file": (o.TaskFileOpt, None),
    "truncate_dim": (o.TruncateDimOpt, None),
    "quantize": (o.QuantizeOpt, None),
}

# the groups commands take whole
MODEL = ("normalize", "pooling", "layer", "max_length", "prompt", "bidirectional_last", "bidirectional_mode", "adapter",
         "dtype", "revision", "prompt_name")
ENCODING = ("device", "batch_size", "batch_tokens", "compile_model", "cuda_graphs", "unpadded")
STORAGE = ("data", "results_dir", "cache_dir", "no_cache")
VECTORS = ("truncate_dim", "quantize")  # applied to the vectors after the engine (encoding/vector_axes.py)


class Given(dict):
    """The shared options a command was given, by parameter name (choices already plain values)."""

    def api(self) -> dict[str, Any]:
        """The same values as the Python API's keyword arguments (``evaluate``, ``compare``, ``audit``, analyses)."""
        out: dict[str, Any] = {}
        for name, v in self.items():
            if name == "no_cache":
                out["use_cache"] = not v
            elif name == "compile_model":
                out["compile"] = v or None  # None: the model's default, so an unset flag leaves no trace in records
            elif name in ("cuda_graphs", "unpadded"):
                out[name] = v or None
            elif name == "results_dir":
                out["results_dir"] = o.cli_results(v)
            elif name == "task_file":
                out["task_files"] = v or None
            else:
                out[name] = v
        return out


def replace_parameter(command: Callable, placeholder: str, generated: list[inspect.Parameter],
                      collect: Callable[[dict[str, Any]], Any]) -> Callable:
    """``command`` with its ``placeholder`` parameter replaced by ``generated`` ones in its signature.

    typer reads the signature; at call time the generated parameters' values are popped from the keyword
    arguments and ``collect(values)`` is passed as ``placeholder``.
    """
    own = list(inspect.signature(command, eval_str=True).parameters.values())
    at = next(i for i, p in enumerate(own) if p.name == placeholder)
    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own[:at] + generated + own[at + 1 :]]
    names = [p.name for p in generated]

    @functools.wraps(command)
    def wrapped(**kwargs: Any) -> Any:
        values = {n: kwargs.pop(n) for n in names}
        return command(**{placeholder: collect(values)}, **kwargs)

    wrapped.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapped.__annotations__ = {p.name: p.annotation for p in params}
    return wrapped


def shared_options(*names: str):
    """Give a command the shared options ``names`` (or whole groups: ``*MODEL, *ENCODING``) as one ``opts``."""
    unknown = [n for n in names if n not in SHARED]
    if unknown:
        raise ValueError(f"not shared options: {unknown}")
    generated = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=SHARED[n][1], annotation=SHARED[n][0])
                 for n in names]

    def decorate(command: Callable) -> Callable:
        return replace_parameter(command, "opts", generated, lambda v: Given({k: o.value(x) for k, x in v.items()}))

    return decorate


PROTOCOL_ENUMS = {axis: o.choice_enum(axis.title().replace("_", ""), choice.values) for axis, choice in CHOICES.items()}


def protocol_options(*axes: str):
    """Add a ``--axis`` option for each protocol axis (default: every axis of ``CHOICES``) to a command.

    The command declares a ``protocol`` parameter, where the options appear in ``--help``; it
    receives ``{axis: value}`` for the options given (unset ones are left to the suite's or the
    protocol's default).
    """
    names = axes or tuple(CHOICES)
    generated = [
        inspect.Parameter(axis, inspect.Parameter.KEYWORD_ONLY, default=None,
                          annotation=Annotated[PROTOCOL_ENUMS[axis] | None, typer.Option(help=CHOICES[axis].help)])
        for axis in names
    ]

    def decorate(command: Callable) -> Callable:
        return replace_parameter(command, "protocol", generated,
                                 lambda v: {axis: o.value(x) for axis, x in v.items() if x is not None})

    return decorate
