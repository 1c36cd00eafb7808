"""The command line's option words in an error message, as a Python caller spells them.

The checks behind ``embench run`` and ``embench.evaluate`` are one code, deep in the layers, and they name what was
wrong as the command line spells it (``--sick-split 'x'``, ``--ci-seed -1``). A public function says the same in its
own parameters (``sick_split='x'``, ``ci_seed=-1``): :func:`respell` rewrites the option words of a message by the
function's table of :data:`PYTHON_NAMES`, which lists only the options that function takes, so that no other word (a
flag of another command, an option the function has not) is touched; a command to type, which a message puts between
backticks (`embench data download --task STS12`), is kept as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping


def _same(*names: str) -> dict[str, str]:
    """Options spelt as their parameters: ``--max-length`` is ``max_length``."""
    return {"--" + n.replace("_", "-"): n for n in names}


# option groups as the commands share them (cli/option_groups.py), by the parameter each is in Python
_MODEL = _same("pooling", "layer", "max_length", "dtype", "device", "normalize", "prompt", "family", "bidirectional_last",
               "bidirectional_mode", "adapter", "batch_tokens", "compile", "cuda_graphs", "unpadded", "revision",
               "prompt_name") | {"--no-normalize": "normalize=False"}
_PROTOCOL = _same("aggregation", "correlation", "similarity", "text", "sick_split", "stsb_split", "seed", "classifier",
                  "scoring", "pair_features")
_STORAGE = _same("data", "results_dir", "cache_dir") | {"--results": "results_dir", "--no-cache": "use_cache=False"}
_INTERVALS = _same("ci", "resamples", "ci_seed")
_EVALUATE = (_MODEL | _PROTOCOL | _STORAGE | _INTERVALS | _same("batch_size", "truncate_dim", "quantize", "suite", "label",
                                                                "overwrite", "model")
             | {"--task": "tasks", "--task-file": "task_files"})

# function -> {option as the command line spells it: the parameter (a "name=value" is said as it is)}
PYTHON_NAMES: dict[str, dict[str, str]] = {
    "evaluate": _EVALUATE,
    "compare": {**_EVALUATE, **_same("test", "alpha"), "--model": "model_a/model_b"},
    "results": _same("model") | {"--results-dir": "results_dir", "--results": "results_dir", "--task": "task"},
    "report_tables": _same("suite", "split", "caption", "lower_is_better")
    | {"--results-dir": "results_dirs", "--results": "results_dirs", "--model": "models", "--task": "tasks", "--name": "names"},
    "load_model": _MODEL | {"--model": "name_or_path"},
    "EvalProtocol": _PROTOCOL,
    "audit": (_MODEL | _STORAGE | _INTERVALS | _same("knobs", "reported", "tolerance", "batch_size", "truncate_dim", "quantize",
                                                     "sample", "sample_seed", "full_batch_check", "full_dtype_check",
                                                     "full_length_check", "model") | {"--task": "tasks"}),
    # analyses: their own options come as --set KEY=VALUE on the command line, KEY=VALUE in Python
    "analysis": (_MODEL | _STORAGE | _same("batch_size", "limit", "seed", "layers", "heads", "metric", "transform", "k",
                                           "split", "text", "suite", "dataset", "sentence")
                 | {"--model": "models", "--label": "labels", "--set": ""}),
    "curate_triplets": _same("rule", "alpha", "beta", "gamma", "limit", "chat", "max_new_tokens", "batch_size", "device",
                             "answer_prefix", "scores", "out", "llm", "triplets"),
    "generate_triplets": _same("llm", "premises", "out", "data", "limit", "batch_size", "contrastive", "omega", "sample",
                               "temperature", "top_p", "max_new_tokens", "seed", "prompt_entailment",
                               "prompt_contradiction", "chat", "device", "overwrite"),
}

# the words an option takes as its value, where a value is a plain word (``--split tables``, ``--test steiger``):
# without them a word after an option cannot be told from the sentence going on (``--layer must be ...``)
WORDS: dict[str, tuple[str, ...]] = {
    "aggregation": ("all", "mean", "wmean"), "correlation": ("spearman", "pearson"), "text": ("senteval", "raw"),
    "sick_split": ("test", "full"), "stsb_split": ("test", "dev", "train"), "similarity": ("cosine", "dot"),
    "classifier": ("default", "prototyping"), "scoring": ("cosine", "regressor"), "pair_features": ("senteval-code", "uv"),
    "split": ("tables", "rows"), "test": ("bootstrap", "permutation", "steiger"), "dtype": ("fp32", "bf16", "fp16"),
    "quantize": ("float32", "int8", "uint8", "binary", "ubinary"), "device": ("all", "cpu", "cuda", "mps"),
    "bidirectional_mode": ("sum", "sum-code", "mask", "billm"),
}

# an option (``--ci-seed``, ``--model(s)``) neither inside a word nor quoted (``unknown task '--x'`` quotes a value
# given), then perhaps its value after one space: a quoted string, a number, a placeholder (LEVEL), or a token (a path,
# a name, a list ``cuda:0,cuda:1``; a comma before a space ends it), which :func:`_python` tells from a word of the text
_OPTION = re.compile(r"(?<![\w`'\"-])(?P<option>--[a-z][a-z0-9-]*)(?P<plural>\(s\))?"
                     r"(?: (?P<value>'[^']*'|\"[^\"]*\"|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])|[A-Z][A-Z0-9_]*(?!\w)"
                     r"|[\w~/.](?:[^\s'\",;()]|,(?=[^\s,]))*))?")
_NUMBER_OR_PLACEHOLDER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|[A-Z][A-Z0-9_]*")


def respell(message: str, options: Mapping[str, str], words: Mapping[str, tuple[str, ...]] = WORDS) -> str:
    """``message`` with each option of ``options`` in the Python spelling: ``--ci 'abc'`` -> ``ci='abc'``, ``--layer
    must ...`` -> ``layer must ...``; other ``--words`` and anything between backticks as they are. ``words``: the
    plain words each parameter takes (:data:`WORDS`; a layer above core adds its own names: training's recipes)."""
    parts = re.split(r"(`[^`]*`)", message)  # odd parts: commands to type, kept
    return "".join(p if i % 2 else _OPTION.sub(lambda m: _python(m, options, words), p) for i, p in enumerate(parts))


def _python(m: re.Match[str], options: Mapping[str, str], words: Mapping[str, tuple[str, ...]]) -> str:
    name = options.get(m["option"])
    if name is None:  # not an option of this function: left as the message has it
        return m[0]
    if not name:  # an option that is no parameter: the word after it is the parameter, as written (--set KEY=VALUE is
        return m["value"] or ""  # KEY=VALUE), a plain one too (--set optimizer must ...: not the sentence's word)
    value, rest = m["value"], ""
    if value is not None and not _is_value(value, words.get(name, ())):
        value, rest = None, " " + m["value"]  # a word of the sentence, not a value of the option
    elif value is not None and value[0] not in "'\"":
        value = value.rstrip(".:")  # the sentence's own punctuation after a path
        rest = m["value"][len(value):]
    if value is None or "=" in name:
        return name + rest if value is None else f"{name} {value}{rest}"
    shown = value if value[0] in "'\"" or _NUMBER_OR_PLACEHOLDER.fullmatch(value) else repr(value)
    return f"{name}={shown}{rest}"


def _is_value(token: str, takes: tuple[str, ...]) -> bool:
    """A quoted string, a number or a placeholder; a word the option takes (``takes``); or a path, a name or a list: a
    token holding / . : _ - , or a digit (``--layer must`` goes on with the sentence; ``--model all-MiniLM-L6-v2``
    names one)."""
    bare = token.rstrip(".:")  # "--test permutation: a seed group ...": the sentence's colon
    if token[0] in "'\"" or _NUMBER_OR_PLACEHOLDER.fullmatch(token) or bare in takes:
        return True
    return len(bare) > 1 and (any(c in bare for c in "/.:_-,") or any(c.isdigit() for c in bare))  # not "--data / ENV"
