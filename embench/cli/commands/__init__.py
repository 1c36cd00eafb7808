"""The CLI's commands, one module each, registered by name.

An entry is a lazy ``"module:attr"`` path to the command function or to a command group (a
``typer.Typer``); a command's description is its docstring's first line, a group's is given here.
:mod:`embench.cli.app` adds every entry to the app; no command imports the app.
"""

from __future__ import annotations

from ...core.registry import Registry

COMMANDS: Registry = Registry("command")
COMMANDS.add("run", "embench.cli.commands.run:run")
COMMANDS.add("compare", "embench.cli.commands.compare:compare")
COMMANDS.add("list", "embench.cli.commands.list:list_")
COMMANDS.add("data", "embench.cli.commands.data:data_app", description="The data root: check it, download into it.")
COMMANDS.add("results", "embench.cli.commands.results:results_app", description="Stored result records.")
COMMANDS.add("audit", "embench.cli.commands.audit:audit_app",
             description="Protocol audit: one model under every protocol variant (SimCSE Table B.2), and which "
                         "protocol published numbers match. `embench audit table FILE` checks a published table.")
COMMANDS.add("analyze", "embench.cli.commands.analyze:analyze")
COMMANDS.add("mteb", "embench.cli.commands.mteb:mteb_app",
             description="MTEB tasks through the mteb library, fed from the data root.")
COMMANDS.add("train", "embench.cli.commands.train:train")
COMMANDS.add("generate", "embench.cli.commands.generate:generate_app",
             description="LLM-generated training triplets: contrastive decoding (MultiCSR stage 1), self-curation (stage 2).")
COMMANDS.add("grid", "embench.cli.commands.grid:grid_app",
             description="Models x tasks x protocols as jobs (local processes or a Slurm array); `embench grid status DIR`.")
COMMANDS.add("report", "embench.cli.commands.report:report")
