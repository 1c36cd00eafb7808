"""The typer app: every registered command, and ``main()``, which prints user errors without a traceback."""

from __future__ import annotations

import logging
import os
import sys
import warnings

import typer
from rich.markup import escape

from ..core.boundary import command_line
from ..core.errors import EmbenchError
from ..core.out_of_memory import is_out_of_memory
from ..core.signals import terminate_as_interrupt, terminated
from .commands import COMMANDS
from .out_of_memory import out_of_memory_message
from .output import err, interrupt_said, show_warning

app = typer.Typer(
    help="Benchmark and analyse sentence embeddings under every evaluation protocol.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # plain help: text is shown as written (a '[u, v]' in a help string is not read as rich markup), flags show
    # no '<bool>' placeholder, and required options say [required]
    rich_markup_mode=None,
    context_settings={"max_content_width": 120},  # wide terminals get whole command descriptions
)
for _name in COMMANDS:
    _command = COMMANDS.get(_name)
    if isinstance(_command, typer.Typer):
        app.add_typer(_command, name=_name, help=COMMANDS.description(_name))
    else:
        app.command(_name)(_command)


@app.callback()
def _spelled_as_typed(ctx: typer.Context) -> None:
    # every command: the Python API's errors keep the options as the command line spells them (--ci, not ci=), until
    # the command ends (a test, or a notebook, may call the API after a command in the same process)
    ctx.call_on_close(command_line())


class _LogFormat(logging.Formatter):
    """embench's own warnings as one ``warning: ...`` line, like :func:`show_warning`'s; anything else (another
    library's, or embench's INFO and DEBUG under EMBENCH_LOG) with its level and logger."""

    def format(self, record: logging.LogRecord) -> str:
        if record.levelno == logging.WARNING and record.name.split(".")[0] == "embench":
            return f"warning: {record.getMessage()}"
        return super().format(record)


def main() -> None:
    """Entry point: user errors are printed as one clear message, without a traceback."""
    logging.basicConfig(level=os.environ.get("EMBENCH_LOG", "WARNING"), format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:  # embench's logged warnings read as its other warnings do
        handler.setFormatter(_LogFormat("%(levelname)s %(name)s: %(message)s"))
    warnings.filterwarnings("default", module="embench")
    warnings.showwarning = show_warning  # embench's warnings as one "warning: ..." line, without the source line
    # peft 0.21 reads transformers' deprecated `is_gradient_checkpointing` when it wraps a model (LoRA, an adapter):
    # a deprecation between the two libraries, printed on every LoRA run, that no embench option can change
    warnings.filterwarnings("ignore", message=r"`is_gradient_checkpointing` is deprecated", category=FutureWarning)
    # TOKENIZERS_PARALLELISM is left as the user has it: set to false, it makes the Rust tokenizer run on one core,
    # and on a GPU the engine's pass waits on tokenising (sts-all: 0.9 s against 0.58 s on 2 cores). embench itself
    # never forks a process that tokenizes (subprocesses exec, several devices spawn); should a library fork, the
    # tokenizer turns its threads off in the child itself
    # transformers' weight-loading bars and advisory logs stay out of embench's output; set through the
    # environment (read when transformers is first imported) so that --help does not import it
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    # peft imports bitsandbytes where it is installed, and bitsandbytes then warns on every command that an
    # optional CPU kernel package ('kernels') is missing: it concerns 4-bit compute on a CPU only, not a user's run
    logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)
    if {"-q", "--quiet"} & set(sys.argv[1:]):
        # -q silences third-party tqdm bars too (mteb's "Computing text hashes", datasets' maps): tqdm reads
        # TQDM_DISABLE when it is imported, so it is set here, before any command imports a library
        os.environ.setdefault("TQDM_DISABLE", "1")
    terminate_as_interrupt()  # Slurm, timeout and docker stop send SIGTERM: stop as on Ctrl-C, keeping finished work
    try:
        code = app(standalone_mode=False)  # click's own usage errors are shown below, after one cleaning
    except EmbenchError as e:
        # the message is plain text: a '[' in a task name or path must not be read as rich markup
        # soft_wrap: a long path stays one piece that can be copied, not cut at the terminal's width
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False, markup=True, soft_wrap=True)
        sys.exit(getattr(e, "exit_status", 2))  # 3: out of memory (train/fit_memory.py), as below
    except typer.Abort:  # an interrupt no command caught (typer before 0.29): nothing of its own to keep
        _say_interrupted()
        sys.exit(143 if terminated() else 130)
    except Exception as e:  # out of memory (GPU or host), or a usage error of click (or the click typer carries)
        if is_out_of_memory(e):
            command = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
            err.print(f"[bold red]error:[/] {escape(out_of_memory_message(e, command))}", highlight=False, soft_wrap=True)
            sys.exit(3)
        if not (hasattr(e, "show") and hasattr(e, "exit_code")):
            raise
        if isinstance(e, typer.BadParameter):  # typer words a bad choice as pydantic does: "Value error, 'x' is ..."
            e.message = e.message.removeprefix("Value error, ")
        e.show()
        sys.exit(e.exit_code)
    code = code if isinstance(code, int) else 0
    if code == 130 and not interrupt_said():  # typer 0.29 returns an interrupt no command caught as exit 130, silently
        _say_interrupted()
    sys.exit(143 if terminated() and code == 130 else code)


def _say_interrupted() -> None:
    """The line after Ctrl-C or SIGTERM of a command that keeps nothing of its own (analyze, audit, compare, mteb...)."""
    err.print(f"[yellow]{'stopped by SIGTERM' if terminated() else 'interrupted'}[/]: what was finished is kept (encoded "
              "texts in the embedding cache, finished tasks in the results folder); run the same command again to "
              "go on from there", highlight=False, soft_wrap=True)
