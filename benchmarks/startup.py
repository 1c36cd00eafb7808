"""Start-up cost of the commands that do no work: ``--help``, ``embench list``, ``audit table``.

    python benchmarks/startup.py [--repeat 3] [--out FILE.json]

Each command runs in a fresh process (``python -m embench.cli ...``) ``repeat`` times; the table gives the
median CPU time (user + system of the child, which load from other processes does not inflate as it
does wall time), the median wall time, peak resident memory, and the heavy libraries the command
imported (checked in a separate process through ``sys.modules``). The peer is a bare Python that only
imports typer and rich (what any typer CLI pays), so "x bare" reads as the CLI's own overhead.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("torch", "transformers", "pandas", "scipy", "sklearn", "sentence_transformers", "mteb", "matplotlib")
PUBLISHED = "| model | STS12 | STS13 | Avg. |\n|---|---|---|---|\n| A | 70.00 | 80.00 | 75.00 |\n"


def commands(table: Path) -> list[list[str]]:
    lists = ["tasks", "suites", "poolers", "models", "analyses", "datasets", "families", "methods", "recipes", "commands"]
    helps = ["run", "compare", "audit", "analyze", "mteb", "train", "data", "results", "grid", "list"]
    return [["--help"], *([c, "--help"] for c in helps), *(["list", w] for w in lists), ["audit", "table", str(table)]]


def timed(argv: list[str]) -> tuple[float, float, float]:
    """(CPU seconds, wall seconds, peak RSS MiB) of one fresh process running ``argv`` (wait4: its own usage)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = 0  # reaped above
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024


def heavy_imports(args: list[str]) -> list[str]:
    code = (f"import sys; from typer.testing import CliRunner; from embench.cli import app; "
            f"CliRunner().invoke(app, {args!r}); print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    return [m for m in subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip().split(",") if m]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "published.md"
        table.write_text(PUBLISHED)
        bare = [timed([sys.executable, "-c", "import typer, rich.console"]) for _ in range(args.repeat)]
        bare_cpu = statistics.median(c for c, _, _ in bare)
        rows = []
        for cmd in commands(table):
            runs = [timed([sys.executable, "-m", "embench.cli", *cmd]) for _ in range(args.repeat)]
            cpu, wall = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
            label = " ".join(cmd if cmd[:2] != ["audit", "table"] else ["audit", "table", "FILE"])
            rows.append({"command": f"embench {label}", "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
                         "x_bare": round(cpu / bare_cpu, 1), "peak_rss_mib": round(max(r[2] for r in runs)),
                         "heavy_imports": heavy_imports(cmd)})
    print(f"bare python + typer + rich: {bare_cpu:.2f} s CPU (median of {args.repeat})")
    print(f"{'command':<34}{'CPU s':>7}{'wall s':>8}{'x bare':>8}{'RSS MiB':>9}  heavy imports")
    for r in rows:
        print(f"{r['command']:<34}{r['cpu_s']:>7.2f}{r['wall_s']:>8.2f}{r['x_bare']:>8.1f}{r['peak_rss_mib']:>9}  "
              f"{', '.join(r['heavy_imports']) or '-'}")
    if args.out:
        args.out.write_text(json.dumps({"bare_cpu_s": bare_cpu, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
