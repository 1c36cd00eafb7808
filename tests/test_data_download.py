"""``embench data download`` for every file: conversions, compression, checksums, resuming, names, hints.

Downloads come from a local HTTP server on 127.0.0.1 or a local mirror folder; tests never reach the internet.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import json
import re
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from embench.analysis.labelled import LABELLED, load_labelled
from embench.cli.app import app
from embench.core.errors import ChecksumError, EmbenchError, MissingDataError, UnknownNameError
from embench.data import DataRoot
from embench.data.manifest import NOT_DATA, check_manifest_files, download, load_manifest
from embench.data.training_sets import corpora_files, snli_triplets
from embench.data_names import manifest_paths
from embench.tasks import TASKS


@pytest.fixture()
def server(tmp_path):
    """A local HTTP server serving a temporary folder; ``requests`` records the paths asked for."""
    served = tmp_path / "served"
    served.mkdir()
    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # quiet, but remember what was fetched
            requests.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(served)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)  # quick shutdown
    thread.start()
    yield served, f"http://127.0.0.1:{server.server_address[1]}", requests
    server.shutdown()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _manifest(tmp_path: Path, entries: list[dict]) -> Path:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"version": 1, "files": entries}))
    return path


BANKING_CSV = b'text,category\n"Where is my card?",card_arrival\nRefund please,refund\n'
BANKING_JSONL = b'{"text": "Where is my card?", "label": "card_arrival"}\n{"text": "Refund please", "label": "refund"}\n'


def test_a_converted_entry_is_downloaded_converted_and_stored_compressed(tmp_path, server):
    served, url, _ = server
    (served / "train.csv").write_bytes(BANKING_CSV)
    for name, data in (("a.toks", b"x y\nz\n"), ("b.toks", b"x\ny z\n"), ("sim.txt", b"1\n0\n")):
        (served / name).write_bytes(data)
    twitter = b'{"sentence1": "x y", "sentence2": "x", "label": 1}\n{"sentence1": "z", "sentence2": "y z", "label": 0}\n'
    manifest = _manifest(tmp_path, [
        {"path": "tasks/banking77/train.jsonl.gz", "task": "banking77", "url": f"{url}/train.csv", "sha256": _sha(BANKING_JSONL),
         "convert": {"name": "csv-to-jsonl", "header": True, "columns": ["text", "label"]}},
        {"path": "tasks/twitterurl/train.jsonl.gz", "task": "twitterurl", "sha256": _sha(twitter),
         "url": [f"{url}/a.toks", f"{url}/b.toks", f"{url}/sim.txt"],
         "convert": {"name": "columns-to-jsonl", "fields": ["sentence1", "sentence2", "label"], "integers": ["label"]}},
        {"path": "raw/sts/STS12/STS.gs.x.txt.gz", "task": "STS12", "url": f"{url}/train.csv", "sha256": _sha(BANKING_CSV), "compress": True},
    ])
    root = DataRoot(tmp_path / "data")
    assert [s for _, s in download(root, manifest=manifest)] == ["downloaded"] * 3
    assert gzip.decompress((root.path / "tasks/banking77/train.jsonl.gz").read_bytes()) == BANKING_JSONL
    assert gzip.decompress((root.path / "tasks/twitterurl/train.jsonl.gz").read_bytes()) == twitter
    assert gzip.decompress((root.path / "raw/sts/STS12/STS.gs.x.txt.gz").read_bytes()) == BANKING_CSV  # compress: plain upstream, .gz stored
    assert [r["status"] for r in check_manifest_files(root, manifest)] == ["ok"] * 3


def test_a_checksum_mismatch_after_conversion_writes_nothing(tmp_path, server):
    served, url, _ = server
    (served / "train.csv").write_bytes(BANKING_CSV.replace(b"refund\n", b"refunds\n"))  # upstream changed
    manifest = _manifest(tmp_path, [{"path": "tasks/banking77/train.jsonl.gz", "task": "banking77", "url": f"{url}/train.csv",
                                     "sha256": _sha(BANKING_JSONL), "convert": {"name": "csv-to-jsonl", "header": True, "columns": ["text", "label"]}}])
    root = DataRoot(tmp_path / "data")
    with pytest.raises(ChecksumError, match=r"train\.csv: sha256 \w+ after conversion 'csv-to-jsonl' does not match .*tasks/banking77/train\.jsonl\.gz; nothing was written"):
        download(root, manifest=manifest)
    assert not root.path.exists() or not any(p.is_file() for p in root.path.rglob("*"))


def test_the_cli_fetches_every_other_file_when_one_fails_and_names_it(tmp_path, server):
    served, url, _ = server
    good, bad = b"kept line\n", b"upstream changed\n"
    (served / "good.txt").write_bytes(good)
    (served / "bad.txt").write_bytes(bad)
    entries = [
        {"path": "corpora/bad.txt.gz", "task": "corpora", "url": f"{url}/bad.txt", "sha256": _sha(b"as listed\n"), "compress": True,
         "verified": "no: not compared yet"},
        {"path": "corpora/gone.txt.gz", "task": "corpora", "url": f"{url}/gone.txt", "sha256": _sha(good), "compress": True},
        {"path": "corpora/good.txt.gz", "task": "corpora", "url": f"{url}/good.txt", "sha256": _sha(good), "compress": True},
    ]
    manifest = _manifest(tmp_path, entries)
    data = tmp_path / "data"
    r = CliRunner().invoke(app, ["data", "download", "--data", str(data), "--manifest", str(manifest)])
    out = " ".join(r.output.split())  # the console wraps long lines
    assert r.exit_code == 1, r.output
    assert "1 downloaded, 0 already present, 2 failed" in out
    assert "not downloaded: corpora/bad.txt.gz" in out and "never confirmed against the upstream release" in out and "not compared yet" not in out
    assert "not downloaded: corpora/gone.txt.gz" in out and "could not download" in out
    assert gzip.decompress((data / "corpora/good.txt.gz").read_bytes()) == good  # the good file is kept
    assert not (data / "corpora/bad.txt.gz").exists()

    # --accept-mismatch stores it, says so, and `data check --files` reports the difference
    r = CliRunner().invoke(app, ["data", "download", "--data", str(data), "--manifest", str(manifest), "--accept-mismatch"])
    assert r.exit_code == 1 and "1 downloaded, 1 already present, 1 failed" in r.output, r.output
    assert "checksum that differs from the manifest's: corpora/bad.txt.gz" in " ".join(r.output.split())
    assert gzip.decompress((data / "corpora/bad.txt.gz").read_bytes()) == bad
    statuses = {r["path"]: r["status"] for r in check_manifest_files(DataRoot(data), manifest)}
    assert statuses["corpora/bad.txt.gz"] == "differs" and statuses["corpora/good.txt.gz"] == "ok"


def test_a_resume_keeps_good_files_fetches_absent_and_damaged_ones(tmp_path, server):
    served, url, requests = server
    files = {f"f{i}.txt": f"line {i}\n".encode() for i in range(3)}
    for name, data in files.items():
        (served / name).write_bytes(data)
    manifest = _manifest(tmp_path, [{"path": f"corpora/{n}.gz", "task": "corpora", "url": f"{url}/{n}", "sha256": _sha(d), "compress": True}
                                    for n, d in files.items()])
    root = DataRoot(tmp_path / "data")
    (root.path / "corpora").mkdir(parents=True)
    (root.path / "corpora/f0.txt").write_bytes(files["f0.txt"])  # present, uncompressed: its twin counts
    (root.path / "corpora/f1.txt.gz").write_bytes(gzip.compress(files["f1.txt"])[:15])  # a download cut short
    done = download(root, manifest=manifest)
    assert done == [("corpora/f0.txt.gz", "present"), ("corpora/f1.txt.gz", "downloaded"), ("corpora/f2.txt.gz", "downloaded")]
    assert requests and all("f0" not in r for r in requests)
    assert gzip.decompress((root.path / "corpora/f1.txt.gz").read_bytes()) == files["f1.txt"]


def test_a_local_mirror_folder_serves_the_data_roots_own_files(data_root, tmp_path):
    root = DataRoot(tmp_path / "data")
    r = CliRunner().invoke(app, ["data", "download", "-t", "trec", "-t", "banking77", "--data", str(root.path),
                                 "--base-url", data_root.as_uri()])
    assert r.exit_code == 0, r.output
    assert "4 downloaded, 0 already present" in r.output
    assert len(load_labelled("banking77", root)) == 13083


@pytest.mark.parametrize(("args", "message"), [
    (["--base-url", "{shared}"], r"--base-url '.*': give a URL \(https://..., or file:///path for a local folder\)"),
    (["--base-url", "file:///no/such/mirror"], r"--base-url file:///no/such/mirror: the folder /no/such/mirror does not exist"),
    (["--hub-mirror", "{shared}"], r"--hub-mirror is where --from-hub copies from: give --from-hub too"),
    (["--data", "{file}"], r"data root .*a.txt is a file, not a folder"),
])
def test_download_options_are_one_error_before_any_file_is_fetched(data_root, tmp_path, args, message):
    (tmp_path / "a.txt").write_text("x")
    args = [a.format(shared=data_root, file=tmp_path / "a.txt") for a in args]
    r = CliRunner().invoke(app, ["data", "download", "-t", "trec", *(["--data", str(tmp_path / "d")] if "--data" not in args else []), *args])
    assert r.exit_code != 0 and r.exception is not None and not (tmp_path / "d").exists()
    assert re.search(message, str(r.exception)), str(r.exception)


def test_names_select_the_files_their_readers_read():
    assert manifest_paths(["STS-B"]) == manifest_paths(["STSBenchmark"])  # an alias
    assert manifest_paths(["20newsgroups"]) == manifest_paths(["twentynewsgroups"]) == {
        "tasks/twentynewsgroups/train.jsonl.gz", "tasks/twentynewsgroups/test.jsonl.gz"}
    assert manifest_paths(["MTEB:SICK-R"]) == {f"raw/sick2014/SICK_{s}.txt.gz" for s in ("train", "trial", "test_annotated")}
    assert {p.split("/")[0] for p in manifest_paths(["corpora"])} == {"corpora"}
    assert manifest_paths(["snli"]) == {f"senteval/downstream/SNLI/{n}.{s}" for n in ("s1", "s2", "labels") for s in ("dev", "test")}
    with pytest.raises(UnknownNameError, match="unknown task or dataset 'bankin77'. Did you mean 'banking77'"):
        manifest_paths(["bankin77"])


def test_every_task_and_dataset_reads_only_files_the_manifest_lists():
    listed = {e.path for e in load_manifest()}
    for name in [*TASKS.names(), *LABELLED.names(), "corpora", "snli"]:
        assert manifest_paths([name]) <= listed, name  # manifest_paths raises for a file not listed


def test_every_missing_file_hint_names_a_download_that_fetches_that_file(tmp_path):
    import embench

    root = DataRoot(tmp_path / "empty")
    readers = [functools.partial(t.prepare, root, embench.EvalProtocol()) for _, t in TASKS.items() if t.kind != "mteb"]
    readers += [functools.partial(load_labelled, n, root) for n in LABELLED.names()]
    readers += [functools.partial(corpora_files, root), functools.partial(snli_triplets, root)]
    for read in readers:
        with pytest.raises(MissingDataError) as err:
            read()
        task = str(err.value).split("embench data download --task ")[1].split("`")[0]
        rel = str(Path(str(err.value.path).split(", ")[0]).relative_to(root.path))
        fetched = manifest_paths([task])
        assert rel in fetched or (rel == "corpora/*.txt.gz" and fetched == manifest_paths(["corpora"])), (task, rel)


def test_every_file_of_the_data_root_is_in_the_manifest(data_root):
    listed = {e.path for e in load_manifest()}
    files = {str(p.relative_to(data_root)) for p in data_root.rglob("*") if p.is_file() and p.name not in NOT_DATA}
    assert files - listed == set()


def test_data_check_files_lists_each_file_with_its_status(tmp_path):
    root = tmp_path / "data"
    (root / "tasks/agnews").mkdir(parents=True)
    (root / "tasks/agnews/test.jsonl").write_text("{}\n")  # differs from the manifest's
    (root / "notes.txt").write_text("mine\n")
    r = CliRunner().invoke(app, ["data", "check", "--files", "--data", str(root), "--format", "json"])
    assert r.exit_code == 1, r.output  # a damaged file: the listing, then a failing exit status
    rows = {row["path"]: row["status"] for row in json.loads(r.stdout)}
    assert rows["tasks/agnews/test.jsonl"] == "differs" and rows["notes.txt"] == "unlisted"
    assert rows["corpora/brown.txt.gz"] == "missing" and len(rows) == len(load_manifest()) + 1


@pytest.mark.slow  # two checks of every file's checksum status
def test_data_check_of_a_root_without_any_file_fails_saying_so_and_a_partial_root_passes(tmp_path, data_root):
    empty = tmp_path / "empty"
    (empty / "mine").mkdir(parents=True)
    (empty / "mine/notes.txt").write_text("x\n")  # an unlisted file does not make it a data root
    r = CliRunner().invoke(app, ["data", "check", "--data", str(empty)])
    assert r.exit_code == 1 and f"no file of the manifest is in {empty}" in " ".join(r.stderr.split())
    partial = tmp_path / "partial"
    path = next(e.path for e in load_manifest() if e.path.startswith("senteval/downstream/STS/STS12"))
    (partial / path).parent.mkdir(parents=True)
    (partial / path).write_bytes((data_root / path).read_bytes())
    r = CliRunner().invoke(app, ["data", "check", "--data", str(partial)])
    assert r.exit_code == 0, r.output  # a partial root is fine: one file present, every other missing


@pytest.mark.slow  # imports mteb for its pinned revision (several seconds)
def test_from_hub_copies_the_dataset_at_the_revision_mteb_pins_from_a_local_hub_mirror(tmp_path):
    import mteb

    mirror = tmp_path / "hub"
    (mirror / "mteb/banking77/data").mkdir(parents=True)
    (mirror / "mteb/banking77/data/test.jsonl").write_text('{"text": "card?", "label": 11}\n')
    root = tmp_path / "data"
    args = ["data", "download", "--from-hub", "-t", "MTEB:Banking77Classification", "--data", str(root), "--hub-mirror", str(mirror)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    copy = root / "mteb/Banking77Classification"
    assert (copy / "data/test.jsonl").read_text() == '{"text": "card?", "label": 11}\n'
    pinned = mteb.get_task("Banking77Classification").metadata.dataset
    assert json.loads((copy / ".embench-source.json").read_text()) == {"repo_id": pinned["path"], "revision": pinned["revision"]}
    assert f"{pinned['path']}@{pinned['revision']}" in r.output
    # a mirror without the repository: a clear error, the earlier copy kept, nothing half-written
    r = CliRunner().invoke(app, [*args[:4], "MTEB:EmotionClassification", *args[5:]])
    assert r.exit_code != 0 and "has no folder mteb/emotion for EmotionClassification" in str(r.exception)
    assert sorted(p.name for p in (root / "mteb").iterdir()) == ["Banking77Classification"]


@pytest.mark.slow  # imports mteb for its task names
def test_from_hub_reads_embenchs_alias_before_mtebs_names(tmp_path):
    """-t STS-B is embench's STSBenchmark (MTEB:STSBenchmark), not the nearest mteb name (MTEB:STSB, another set);
    SICK-R, which embench calls SICKRelatedness, is still mteb's SICK-R."""
    mirror = tmp_path / "hub"
    for repo in ("mteb/stsbenchmark-sts", "mteb/sickr-sts"):
        (mirror / repo).mkdir(parents=True)
        (mirror / repo / "test.jsonl").write_text('{"sentence1": "a", "sentence2": "b", "score": 1}\n')
    r = CliRunner().invoke(app, ["data", "download", "--from-hub", "-t", "STS-B", "-t", "SICK-R", "--data",
                                 str(tmp_path / "data"), "--hub-mirror", str(mirror)])
    assert r.exit_code == 0, r.output
    assert "MTEB:STSBenchmark: mteb/stsbenchmark-sts@" in r.output and "MTEB:SICK-R: mteb/sickr-sts@" in r.output


@pytest.mark.slow  # mteb and datasets read the copy (several seconds)
def test_an_mteb_task_without_its_files_reads_its_hub_copy(tmp_path):
    import mteb

    from embench.tasks.mteb.load import load_into

    copy = tmp_path / "mteb/Banking77Classification"
    copy.mkdir(parents=True)
    rows = '{"text": "where is my card", "label": 11}\n{"text": "refund me", "label": 51}\n'
    for split in ("train", "test"):
        (copy / f"{split}.jsonl").write_text(rows)
    task = mteb.get_task("Banking77Classification")
    with pytest.raises(MissingDataError, match="`embench data download --task MTEB:SciFact`") as err:
        load_into(mteb.get_task("SciFact"), DataRoot(tmp_path))  # no files, no hub copy: the hint fetches them
    assert str(err.value.path.relative_to(tmp_path)) in manifest_paths(["MTEB:SciFact"])
    files, meta, _ = load_into(task, DataRoot(tmp_path))
    assert meta["data_source"] == f"local copy {copy}" and copy / "test.jsonl" in files
    assert task.dataset["test"]["text"] == ["where is my card", "refund me"]


def test_a_gzip_bomb_from_a_mirror_is_refused_before_it_fills_the_memory(tmp_path, server, monkeypatch):
    from embench.data import manifest as m

    monkeypatch.setattr(m, "INFLATE_FLOOR", 1 << 20)  # a 1 MiB floor: the bomb stays small enough for a test
    served, url, _ = server
    (served / "bomb.txt").write_bytes(gzip.compress(b"\0" * (20 << 20)))  # 20 MiB of zeros in ~20 kB
    manifest = _manifest(tmp_path, [{"path": "corpora/bomb.txt.gz", "task": "corpora", "url": f"{url}/bomb.txt",
                                     "sha256": _sha(b"x"), "compress": True}])
    r = CliRunner().invoke(app, ["data", "download", "--data", str(tmp_path / "data"), "--manifest", str(manifest)])
    out = " ".join(r.output.split())
    assert r.exit_code == 1 and "a gzip bomb?" in out and "Traceback" not in out
    assert not (tmp_path / "data" / "corpora" / "bomb.txt.gz").exists()


def test_a_full_data_root_is_one_error_per_file_and_keeps_nothing_half_written(tmp_path, server, monkeypatch):
    import errno

    served, url, _ = server
    (served / "a.txt").write_bytes(b"a\n")
    manifest = _manifest(tmp_path, [{"path": "corpora/a.txt", "task": "corpora", "url": f"{url}/a.txt", "sha256": _sha(b"a\n")}])
    from embench.core import atomic  # every data file is written through it

    class Full:  # the disk fills up while the file is written
        def __init__(self, path, mode):
            self.f = open(path, mode)

        def write(self, data):
            self.f.write(data[:1])
            raise OSError(errno.ENOSPC, "No space left on device")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()
            return False

    monkeypatch.setattr(atomic, "open", Full, raising=False)
    root = tmp_path / "data"
    r = CliRunner().invoke(app, ["data", "download", "--data", str(root), "--manifest", str(manifest)])
    out = " ".join(r.output.split())
    assert r.exit_code == 1 and "cannot write" in out and "No space left on device" in out, r.output
    assert list((root / "corpora").iterdir()) == []  # no temporary file left behind


def test_a_write_failure_is_not_said_to_be_a_checksum_the_manifest_never_confirmed(tmp_path, server, monkeypatch):
    """A read-only or full data root ended each unconfirmed entry's error with the --accept-mismatch hint, though
    nothing mismatched: the hint belongs to checksum mismatches alone."""
    import errno

    from embench.core import atomic

    served, url, _ = server
    (served / "a.txt").write_bytes(b"a\n")
    (served / "b.txt").write_bytes(b"upstream changed\n")
    entries = [{"path": "corpora/a.txt.gz", "task": "corpora", "url": f"{url}/a.txt", "sha256": _sha(b"a\n"), "compress": True,
                "verified": "no: not compared yet"},
               {"path": "corpora/b.txt.gz", "task": "corpora", "url": f"{url}/b.txt", "sha256": _sha(b"b\n"), "compress": True,
                "verified": "no: not compared yet"}]

    def read_only(path, mode):  # as a read-only data root answers (tests may run as root, where chmod stops nothing)
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(atomic, "open", read_only, raising=False)
    statuses = dict(download(DataRoot(tmp_path / "data"), manifest=_manifest(tmp_path, entries), keep_going=True))
    assert "Read-only file system" in statuses["corpora/a.txt.gz"]
    assert "never confirmed" not in statuses["corpora/a.txt.gz"] and "--accept-mismatch" not in statuses["corpora/a.txt.gz"]
    assert "does not match" in statuses["corpora/b.txt.gz"] and "--accept-mismatch stores it" in statuses["corpora/b.txt.gz"]


def _senteval_layout(tmp_path: Path) -> tuple[DataRoot, Path]:
    """A root in SentEval's layout (downstream/ only) holding a.txt, and a manifest of a.txt and b.txt (file:// URLs)."""
    src = tmp_path / "src"
    src.mkdir()
    entries = []
    for name in ("a", "b"):
        (src / f"{name}.txt").write_bytes(f"{name}\n".encode())
        entries.append({"path": f"senteval/downstream/STS/X/{name}.txt", "task": "X", "url": (src / f"{name}.txt").as_uri(),
                        "sha256": _sha(f"{name}\n".encode())})
    (tmp_path / "root/downstream/STS/X").mkdir(parents=True)
    (tmp_path / "root/downstream/STS/X/a.txt").write_bytes(b"a\n")
    return DataRoot(tmp_path / "root"), _manifest(tmp_path, entries)


def test_a_download_into_a_senteval_layout_root_sees_its_files_and_keeps_its_layout(tmp_path):
    """Into a root holding SentEval's downstream/ only, download looked for every file under senteval/downstream/: it
    fetched the files the root had again, into a new senteval/downstream/ that then hid downstream/ from every task."""
    root, manifest = _senteval_layout(tmp_path)
    assert dict(download(root, ["X"], manifest)) == {"senteval/downstream/STS/X/a.txt": "present",
                                                      "senteval/downstream/STS/X/b.txt": "downloaded"}
    assert (root.path / "downstream/STS/X/b.txt").read_bytes() == b"b\n" and not (root.path / "senteval").exists()
    # a '..' that stays inside embench's deeper layout leads outside this one: refused all the same
    outside = _manifest(tmp_path, [{"path": "senteval/downstream/../../x.txt", "url": "http://127.0.0.1:9/x", "sha256": "0" * 64}])
    with pytest.raises(EmbenchError, match="manifest entry .* points outside"):
        download(root, manifest=outside)


def test_data_check_compares_a_senteval_layout_roots_files_with_the_manifest(tmp_path):
    """The task table looked a file's checksum up by its path in the root (downstream/...), which the manifest lists as
    senteval/downstream/...: every file of a SentEval-layout root was "unlisted" and a changed one never "differ"."""
    from embench.data.manifest import check_files, manifest_sums

    root, manifest = _senteval_layout(tmp_path)
    (root.path / "downstream/STS/X/b.txt").write_bytes(b"changed\n")
    row = check_files(root, [root.senteval / "STS/X/a.txt", root.senteval / "STS/X/b.txt"], manifest_sums(manifest))
    assert row["checksums"] == "1 ok, 1 differ" and row["differ"] == ["downstream/STS/X/b.txt"]


def test_a_folder_where_a_data_file_goes_is_said_as_such_not_as_a_full_or_read_only_root(tmp_path):
    """A folder in place of a data file failed the write with "(Is a directory) ... make the data root writable or
    free space", after fetching the whole file."""
    root, manifest = _senteval_layout(tmp_path)
    (root.path / "downstream/STS/X/b.txt").mkdir()
    status = dict(download(root, ["X"], manifest, keep_going=True))["senteval/downstream/STS/X/b.txt"]
    assert "b.txt is a folder, where the file senteval/downstream/STS/X/b.txt should be: move the folder away" in status
    assert "writable" not in status


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["data/downstream", "downstream"])
def test_a_senteval_layout_mirror_serves_its_files_too(data_root, tmp_path, layout):
    """README: "another data root will do" as a mirror; a SentEval data folder (or its downstream folder) is one."""
    mirror = tmp_path / "mirror" / layout
    (mirror / "TREC").mkdir(parents=True)
    for f in (data_root / "senteval/downstream/TREC").iterdir():
        (mirror / "TREC" / f.name).write_bytes(f.read_bytes())
    root = DataRoot(tmp_path / "data")
    base = (tmp_path / "mirror" / layout.removesuffix("/downstream")).as_uri()
    done = download(root, paths=manifest_paths(["TREC"]), base_url=base)
    assert done and all(status == "downloaded" for _, status in done), done
