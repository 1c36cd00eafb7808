"""The data root: resolution order, layouts, clear errors on missing or malformed files, download."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import shutil
import threading
from pathlib import Path

import pytest

import embench
from embench.core.errors import ChecksumError, MalformedDataError, MissingDataError
from embench.data import DataRoot, resolve_data_root
from embench.data.manifest import download
from embench.tasks import TASKS
from embench.tasks.data_check import check


def test_data_root_resolution_order(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBENCH_DATA", str(tmp_path / "env"))
    assert resolve_data_root(tmp_path / "opt") == (tmp_path / "opt").resolve()
    assert resolve_data_root(None) == (tmp_path / "env").resolve()
    monkeypatch.delenv("EMBENCH_DATA")
    assert resolve_data_root(None) == Path("~/.cache/embench/data").expanduser().resolve()


def test_a_plain_senteval_downstream_folder_is_accepted(data_root, tmp_path):
    # SentEval's own data/downstream folder, given directly (symlinked, never copied).
    downstream = tmp_path / "SentEval" / "data" / "downstream"
    downstream.mkdir(parents=True)
    for name in ("STS", "SICK"):
        (downstream / name).symlink_to(data_root / "senteval" / "downstream" / name)
    for root in (downstream, downstream.parent):
        prepared = TASKS.get("STS13").prepare(DataRoot(root), embench.EvalProtocol())
        assert prepared.meta["pairs"] == 1500


def test_pair_counts_match_the_data_readme(data_root):
    root = DataRoot(data_root)
    counts = {t: TASKS.get(t).prepare(root, embench.EvalProtocol()).meta["pairs"] for t in TASKS.names() if TASKS.get(t).kind == "sts"}
    assert counts == {"STS12": 3108, "STS13": 1500, "STS14": 3750, "STS15": 3000, "STS16": 1186, "STSBenchmark": 1379, "SICKRelatedness": 4927}
    assert TASKS.get("SICK-R").prepare(root, embench.EvalProtocol(sick_split="full")).meta["pairs"] == 9927
    assert TASKS.get("STS-B").prepare(root, embench.EvalProtocol(stsb_split="dev")).meta["pairs"] == 1500
    raw = TASKS.get("STS12").prepare(root, embench.EvalProtocol(text="raw"))
    assert raw.meta["pairs"] == 3108 and any("'" in t and " ' " not in t for t in raw.texts)


def test_missing_file_names_the_file_and_the_command(tmp_path):
    with pytest.raises(MissingDataError) as e:
        TASKS.get("STS14").prepare(DataRoot(tmp_path), embench.EvalProtocol())
    msg = str(e.value)
    assert "STS.input.deft-forum.txt" in msg and "embench data download --task STS14" in msg


def _copy_sts_b(data_root: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "root" / "senteval" / "downstream" / "STS" / "STSBenchmark"
    dest.mkdir(parents=True)
    for f in ("sts-train.csv", "sts-dev.csv", "sts-test.csv"):
        shutil.copy(data_root / "senteval" / "downstream" / "STS" / "STSBenchmark" / f, dest / f)
    return dest


def test_malformed_line_names_file_and_line(data_root, tmp_path):
    dest = _copy_sts_b(data_root, tmp_path)
    lines = (dest / "sts-test.csv").read_text(encoding="utf-8").splitlines()
    lines[41] = "\t".join(lines[41].split("\t")[:4] + ["four-ish"] + lines[41].split("\t")[5:])
    lines[99] = "only\ttwo"
    (dest / "sts-test.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    root = DataRoot(tmp_path / "root")
    with pytest.raises(MalformedDataError, match=r"sts-test\.csv:42: score 'four-ish' is not a number"):
        TASKS.get("STSBenchmark").prepare(root, embench.EvalProtocol())
    lines[41] = lines[40]
    (dest / "sts-test.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"sts-test\.csv:100: expected at least 7 tab-separated fields, found 2"):
        TASKS.get("STSBenchmark").prepare(root, embench.EvalProtocol())


def test_sts_input_and_gold_of_different_lengths(data_root, tmp_path):
    src = data_root / "senteval" / "downstream" / "STS" / "STS13-en-test"
    dest = tmp_path / "senteval" / "downstream" / "STS" / "STS13-en-test"
    dest.mkdir(parents=True)
    for f in src.iterdir():
        shutil.copy(f, dest / f.name)
    gold = (dest / "STS.gs.FNWN.txt").read_text().splitlines()
    (dest / "STS.gs.FNWN.txt").write_text("\n".join(gold[:-3]) + "\n")
    with pytest.raises(MalformedDataError, match=r"STS\.gs\.FNWN\.txt:187: STS\.input\.FNWN\.txt has 189 lines but STS\.gs\.FNWN\.txt has 186"):
        TASKS.get("STS13").prepare(DataRoot(tmp_path), embench.EvalProtocol())
    (dest / "STS.gs.FNWN.txt").write_text("\n".join(gold[:5] + ["3.x"] + gold[6:]) + "\n")
    with pytest.raises(MalformedDataError, match=r"STS\.gs\.FNWN\.txt:6: gold score '3\.x'"):
        TASKS.get("STS13").prepare(DataRoot(tmp_path), embench.EvalProtocol())


def test_a_byte_order_mark_is_dropped_from_sts_files(data_root, tmp_path):
    """A BOM (a file saved by Notepad or a spreadsheet) made the first gold score "'\\ufeff4.400' is not a number", and
    in an input file stayed in the first sentence: another text, another cache key."""
    src = data_root / "senteval" / "downstream" / "STS" / "STS13-en-test"
    dest = tmp_path / "senteval" / "downstream" / "STS" / "STS13-en-test"
    dest.mkdir(parents=True)
    for f in src.iterdir():
        shutil.copy(f, dest / f.name)
    for name in ("STS.gs.FNWN.txt", "STS.input.FNWN.txt"):
        (dest / name).write_bytes(b"\xef\xbb\xbf" + (dest / name).read_bytes())
    protocol = embench.EvalProtocol()
    assert TASKS.get("STS13").prepare(DataRoot(tmp_path), protocol).texts == TASKS.get("STS13").prepare(
        DataRoot(data_root), protocol).texts


def test_a_sick_file_without_its_header_line_is_an_error_not_one_pair_less(data_root, tmp_path):
    """SICK's reader skipped line 1 whatever it held: a file whose header was lost lost its first pair silently
    (4,926 pairs instead of 4,927)."""
    dest = tmp_path / "senteval" / "downstream" / "SICK"
    dest.mkdir(parents=True)
    lines = (data_root / "senteval/downstream/SICK/SICK_test_annotated.txt").read_text(encoding="utf-8").splitlines()
    (dest / "SICK_test_annotated.txt").write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")
    with pytest.raises(MalformedDataError, match=r"SICK_test_annotated\.txt:1: expected the header line pair_ID "
                                                 r"sentence_A sentence_B relatedness_score \.\.\., found '6\\tThere is no boy"):
        TASKS.get("SICK-R").prepare(DataRoot(tmp_path), embench.EvalProtocol())


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_data_check_lists_every_task_with_files_rows_and_checksums(data_root, tmp_path):
    rows = {r["task"]: r for r in check(DataRoot(data_root))}
    assert {"STS12", "STSBenchmark", "SICKRelatedness"} <= set(rows)
    assert rows["STS12"]["files"] == "20/20" and rows["STS12"]["missing"] == []
    assert rows["STS12"]["checksums"] == "20 ok" and rows["STS12"]["differ"] == []
    dest = _copy_sts_b(data_root, tmp_path)
    (dest / "sts-dev.csv").write_text("changed\n")
    (dest / "sts-train.csv").unlink()
    rows = {r["task"]: r for r in check(DataRoot(tmp_path / "root"))}
    b = rows["STSBenchmark"]
    assert b["files"] == "2/6" and "senteval/downstream/STS/STSBenchmark/sts-train.csv" in b["missing"]
    assert b["differ"] == ["senteval/downstream/STS/STSBenchmark/sts-dev.csv"]
    assert rows["STS12"]["files"] == "0/20"


@pytest.fixture()
def http_root(tmp_path):
    """A local HTTP server on 127.0.0.1 serving a temporary folder (tests never reach the internet)."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_download_fetches_verifies_and_lays_out(data_root, tmp_path, http_root):
    served, url = http_root
    src = data_root / "senteval" / "downstream" / "STS" / "STS13-en-test"
    entries = []
    for f in sorted(src.iterdir()):
        (served / f.name).write_bytes(f.read_bytes())
        entries.append({"path": f"senteval/downstream/STS/STS13-en-test/{f.name}", "url": f"{url}/{f.name}", "task": "STS13", "sha256": hashlib.sha256(f.read_bytes()).hexdigest()})
    raw_gold = data_root / "raw" / "sts" / "STS13" / "STS.gs.FNWN.txt.gz"
    import gzip

    plain = gzip.decompress(raw_gold.read_bytes())
    (served / "gs.txt").write_bytes(plain)
    entries.append({"path": "raw/sts/STS13/STS.gs.FNWN.txt.gz", "url": f"{url}/gs.txt", "task": "STS13", "sha256": hashlib.sha256(plain).hexdigest(), "compress": True})
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"version": 1, "files": entries}))
    root = DataRoot(tmp_path / "data")
    done = download(root, ["STS13"], manifest)
    assert [s for _, s in done] == ["downloaded"] * len(entries)
    assert gzip.decompress((root.path / "raw/sts/STS13/STS.gs.FNWN.txt.gz").read_bytes()) == plain
    assert TASKS.get("STS13").prepare(root, embench.EvalProtocol()).meta["pairs"] == 1500
    assert {s for _, s in download(root, ["STS13"], manifest)} == {"present"}
    # A corrupted mirror: a clear error, and nothing written.
    (served / "STS.gs.OnWN.txt").write_text("tampered\n")
    (root.path / "senteval/downstream/STS/STS13-en-test/STS.gs.OnWN.txt").unlink()
    with pytest.raises(ChecksumError, match="STS.gs.OnWN.txt.*does not match"):
        download(root, ["STS13"], manifest)
    assert not (root.path / "senteval/downstream/STS/STS13-en-test/STS.gs.OnWN.txt").exists()
    assert not list((root.path / "senteval/downstream/STS/STS13-en-test").glob("*.tmp"))  # no temporary file of core.atomic


@pytest.mark.slow  # over 0.3 s on 2 cores: the fast tier stays under a minute
def test_packaged_manifest_checksums_match_the_data(data_root):
    from embench.data.manifest import content_sha256, load_manifest

    entries = load_manifest()
    # the STS and 20 Newsgroups releases are served over plain http by their authors; sha256 guards them
    assert len(entries) >= 150 and all(u.startswith(("https://", "http://")) for e in entries for u in e.urls)
    for e in entries:
        assert content_sha256(data_root / e.path) == e.sha256, e.path


def test_truncated_gzip_names_the_file_in_tasks_and_in_data_check(data_root, tmp_path):
    import gzip

    from embench.core.errors import CorruptFileError

    dest = _copy_sts_b(data_root, tmp_path)
    payload = gzip.compress((dest / "sts-test.csv").read_bytes())
    (dest / "sts-test.csv").unlink()
    (dest / "sts-test.csv.gz").write_bytes(payload[: len(payload) // 2])  # a download cut half-way
    root = DataRoot(tmp_path / "root")
    with pytest.raises(CorruptFileError, match=r"sts-test\.csv\.gz: cannot decompress it .*fetch it again"):
        TASKS.get("STSBenchmark").prepare(root, embench.EvalProtocol())
    row = {r["task"]: r for r in check(root)}["STSBenchmark"]
    assert row["differ"] == ["senteval/downstream/STS/STSBenchmark/sts-test.csv.gz (corrupt)"]
