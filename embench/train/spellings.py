"""The training API's errors in its own parameters: ``make_config(lr=-1)`` says ``lr must ...``, not ``--lr must ...``.

The checks behind ``embench train`` and :func:`~embench.train.make_config` are one code, and they name an option as
the command line spells it (:func:`~embench.train.config.option_flag`: ``--max-steps``, ``--train-data`` for
``data``, ``--set eval_max_length`` for an option with no flag of its own). :func:`python_names` maps each flag back
to the config's field, and a method's own options too (``--tower2``, ``--set nce_form``): those come from the method
registry when an error is said, as a plug-in's method joins it at run time. Core's table of every other public
function (:data:`embench.core.spellings.PYTHON_NAMES`) cannot hold them: core knows nothing of training.
"""

from __future__ import annotations

import dataclasses
import re

from ..core.spellings import WORDS, respell
from ..models.pooling import POOLERS
from .config import FIELDS, OPTIMIZERS, PRECISIONS, option_flag
from .methods import METHODS
from .recipes import RECIPES

# the layer of make_config's keyword arguments, as its errors name it: on the command line those are --set KEY=VALUE
# or an option's own flag; a Python caller gave them as keywords, which the message's KEY already names
OVERRIDES = "--set (or its own flag)"

# the command line's flags that turn an option off without a --no- form of its name (cli/commands/train.py)
_OFF = {"--pretrained": "from_scratch=False", "--train-embeddings": "freeze_embeddings=False",
        "--quiet": "progress=False"}


def python_names(file: str | None = None) -> dict[str, str]:
    """Each option word of a training error -> the parameter it is in Python: a config's field or a method's option;
    ``file``: the parameter a config file is given in (``make_config``'s), None for a function that takes none."""
    names = {"--set": ""}  # --set eval_max_length=5 is eval_max_length=5 (and a KEY alone: _spelled)
    # every method's, as make_config takes them all (one of another method is refused naming that method); a plug-in
    # that cannot load is left out, with the registry's one warning
    own = {f.name for _, method in METHODS.items() for f in dataclasses.fields(method.Options)}
    # a message may write an option as its name with dashes where it has no such flag (--log-steps, --modulus-on):
    # those first, so that a flag of its own (--data is data_root, --train-data is data) wins
    names |= {"--" + name.replace("_", "-"): name for name in sorted(own) + list(FIELDS)}
    names |= {"--no-" + name.replace("_", "-"): f"{name}=False" for name, f in FIELDS.items() if f.type == "bool"}
    names |= _OFF | {option_flag(name): name for name in FIELDS if not option_flag(name).startswith("--set ")}
    if file is not None:
        names["--config"] = file
    return names


def python_words() -> dict[str, tuple[str, ...]]:
    """The plain words training's options take, that a message says after the option (``--recipe crop needs ...``
    is ``recipe='crop' needs ...``, not the sentence going on after ``recipe``)."""
    return {**WORDS, "recipe": tuple(RECIPES), "method": tuple(METHODS), "pooling": tuple(POOLERS),
            "precision": PRECISIONS, "optimizer": OPTIMIZERS, "warmup_of": ("run", "epoch")}


def make_config_spelling(message: str) -> str:
    """``message`` as :func:`~embench.train.make_config` takes its options (``file``, keywords)."""
    return _spelled(message.replace(f"{OVERRIDES}: ", ""), python_names("file"))


def train_spelling(message: str) -> str:
    """``message`` as :func:`~embench.train.train` and :class:`~embench.train.Trainer` take a config's options."""
    return _spelled(message, python_names())


# --set KEY with no "=": the option KEY, perhaps with its value after a space (--set eval_max_length 513 is more than
# ...), which respell says as KEY=VALUE once it reads as KEY's own option word
_SET_KEY = re.compile(r"--set (?P<key>[a-z][a-z0-9_]*)(?![\w=-])")


def _spelled(message: str, names: dict[str, str]) -> str:
    def as_option(m: re.Match[str]) -> str:
        option = "--" + m["key"].replace("_", "-")
        return option if names.get(option) == m["key"] else m[0]  # an unknown KEY is said by --set, as given

    parts = re.split(r"(`[^`]*`)", message)  # odd parts: commands to type, kept (as respell keeps them)
    options = "".join(p if i % 2 else _SET_KEY.sub(as_option, p) for i, p in enumerate(parts))
    return respell(options, names, python_words())
