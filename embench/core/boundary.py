"""Where a Python caller meets embench: what every public function does on the way in and out.

``@python_api("evaluate")`` on a public function, at the outermost call of one (``compare`` calls ``evaluate``; the
command line calls them all):

* an :class:`EmbenchError` says the options in the function's own parameters (``sick_split='x'``, not the command
  line's ``--sick-split 'x'``: :mod:`embench.core.spellings`), the same exception (its class and attributes, such
  as the scores an ``UndefinedScoreError`` carries) re-raised with its message rewritten; a layer above core whose
  options are not known here (training's: a config's fields and every method's, plug-ins too) gives its own table
  or a function that rewrites a message (``@python_api(train_spelling)``);
* the caller's random state is kept (:mod:`embench.core.random_state`).

The command line (``embench ...``) marks its commands with :func:`command_line`: their errors keep its spellings.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any, TypeVar

from .errors import EmbenchError
from .random_state import kept_random_state
from .spellings import PYTHON_NAMES, respell

F = TypeVar("F", bound=Callable[..., Any])
# who made the outermost call in progress: None (no call), "python" or "cli"; inner calls leave the error to it
_CALLER: ContextVar[str | None] = ContextVar("embench_caller", default=None)


def python_api(spelling: str | Mapping[str, str] | Callable[[str], str]) -> Callable[[F], F]:
    """Decorate a public function whose options are ``PYTHON_NAMES[spelling]``, or the table ``spelling``, or whose
    messages ``spelling(message)`` says in its parameters (the module doc says what it does)."""
    say = _respeller(spelling)

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def called(*args: Any, **kwargs: Any) -> Any:
            if _CALLER.get() is not None:  # within the command line, or an inner call: as it is
                return fn(*args, **kwargs)
            token = _CALLER.set("python")
            try:
                with kept_random_state():
                    return fn(*args, **kwargs)
            except EmbenchError as e:
                spelled(e, say)
                raise
            finally:
                _CALLER.reset(token)

        return called  # type: ignore[return-value]

    return decorate


def _respeller(spelling: str | Mapping[str, str] | Callable[[str], str]) -> Callable[[str], str]:
    if isinstance(spelling, str):  # looked up now: a misspelt name fails at import, not at the first error
        spelling = PYTHON_NAMES[spelling]
    if isinstance(spelling, Mapping):
        table = spelling
        return lambda message: respell(message, table)
    return spelling


def spelled(error: EmbenchError, say: Callable[[str], str]) -> None:
    """``error``'s message in the Python spelling (``say``), in place: every class of core/errors.py says ``args[0]``
    (those that override ``__str__`` return it), so the new first argument is what ``str(error)`` says."""
    if error.args and isinstance(error.args[0], str):
        error.args = (say(error.args[0]), *error.args[1:])


def command_line() -> Callable[[], None]:
    """Mark what runs now as the command line's (its errors keep its option words); call the returned function once the
    command has ended."""
    before = _CALLER.get()
    _CALLER.set("cli")

    def ended() -> None:  # set, not ContextVar.reset: a token from another context raises, and a close must not fail
        _CALLER.set(before)

    return ended
