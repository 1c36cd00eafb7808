"""``compare --set-a KEY=VALUE`` / ``--set-b KEY=VALUE``: one side's model settings, as ``train --set`` and ``analyze
--set`` spell an option without a flag of its own.

KEY is the setting's Python name (``max_length``; ``max-length`` too), one of
:data:`embench.evaluation.side_settings.SIDE_KEYS`; VALUE is read by the command's own option of that name, so
``--set-b layer=x`` fails as ``--layer x`` does (an integer), ``normalize=false`` is ``--no-normalize`` and
``dtype=fp8`` lists the choices. A side's setting wins over the shared option (``--pooling mean --set-b
pooling=cls``: A mean, B cls).
"""

from __future__ import annotations

from typing import Any

import typer

from ..core.errors import EmbenchError
from ..evaluation.side_settings import side_key
from .options import value

HELP = ("Side {side} alone: a model setting as KEY=VALUE, KEY an option's name with - or _ (pooling=cls, layer=6, "
        "prompt-name=query, max-length=128, normalize=false, dtype=bf16, truncate-dim=64); it wins over the shared "
        "option, which applies to both sides; repeatable. {other} sets side {b}.")


def side_settings(ctx: typer.Context, pairs: list[str] | None, flag: str) -> dict[str, Any]:
    """``pairs`` (``["pooling=cls", "layer=6"]``) as one side's settings, each value typed and checked by the command's
    own option of its key (``ctx``), before anything loads."""
    params = {p.name: p for p in ctx.command.params}
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not raw.strip():
            raise typer.BadParameter(f"{pair!r}: expected KEY=VALUE, e.g. pooling=cls", param_hint=flag)
        try:
            name = side_key(key, flag)
        except EmbenchError as e:
            raise typer.BadParameter(str(e).removeprefix(f"{flag}: "), param_hint=flag) from None
        if name in out:  # the later one silently winning is a guess at which the user meant
            raise typer.BadParameter(f"{name} given twice; give each setting once", param_hint=flag)
        param = params.get(name)
        if param is None:  # a load_model setting with no flag (family): text, checked when the model loads
            out[name] = raw.strip()
            continue
        try:
            read = param.process_value(ctx, [raw.strip()] if param.multiple else raw.strip())
        except typer.BadParameter as e:  # said as the option itself says it ("Input should be a valid integer")
            # typer words a bad choice as pydantic does ("Value error, 'x' is ..."); main() cuts it for --dtype too
            raise typer.BadParameter(e.message.removeprefix("Value error, "), param_hint=f"{flag} {name}={raw.strip()}") from None
        out[name] = value(read)
    return out
