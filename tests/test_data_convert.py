"""The manifest's named conversions, each on a tiny input written here, against the output worked out by hand."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile

import pytest

from embench.core.errors import EmbenchError
from embench.data.convert import CONVERTERS, convert


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def _tgz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_archive_member_reads_one_file_of_a_zip_or_a_tar():
    zipped = _zip({"test-gold/STS.input.x.txt": b"a\tb\n", "test-gold/other": b"no"})
    assert convert({"name": "archive-member", "member": "test-gold/STS.input.x.txt"}, [zipped]) == b"a\tb\n"
    tarred = _tgz({"stsbenchmark/sts-dev.csv": b"g\tf\t2012\t1\t5.0\tA\tB\n"})
    assert convert({"name": "archive-member", "member": "stsbenchmark/sts-dev.csv"}, [tarred]) == b"g\tf\t2012\t1\t5.0\tA\tB\n"
    with pytest.raises(EmbenchError, match="conversion 'archive-member' failed: KeyError"):
        convert({"name": "archive-member", "member": "absent"}, [zipped])


def test_head_lines_keeps_the_first_lines_with_their_endings():
    assert convert({"name": "head-lines", "lines": 2}, [b"one\ntwo\nthree\n"]) == b"one\ntwo\n"


def test_csv_to_jsonl_names_columns_drops_the_header_and_maps_labels():
    csv_bytes = 'text,category\n"Where is my card, please?",card_arrival\nCafé ok,refund\n'.encode()
    out = convert({"name": "csv-to-jsonl", "header": True, "columns": ["text", "label"]}, [csv_bytes])
    assert out == ('{"text": "Where is my card, please?", "label": "card_arrival"}\n'
                   '{"text": "Café ok", "label": "refund"}\n').encode()
    ag = b"label,title,description\n\"3\",\"Title\",\"Body text\"\n"
    spec = {"name": "csv-to-jsonl", "header": True, "columns": ["label", "title", "text"], "labels": {"3": "Business"},
            "order": ["title", "text", "label"]}
    assert convert(spec, [ag]) == b'{"title": "Title", "text": "Body text", "label": "Business"}\n'  # AG News as stored
    with pytest.raises(EmbenchError, match="a CSV row has 2 columns, the manifest names 3"):
        convert({"name": "csv-to-jsonl", "columns": ["a", "b", "c"]}, [b"x,y\n"])


def test_jsonl_fields_keeps_and_renames():
    src = b'{"text":"i feel fine","label":1,"label_text":"joy"}\n\n{"text":"sad","label":0,"label_text":"sadness"}\n'
    out = convert({"name": "jsonl-fields", "fields": {"text": "text", "label": "label_text"}}, [src])
    assert out == b'{"text": "i feel fine", "label": "joy"}\n{"text": "sad", "label": "sadness"}\n'


def test_columns_to_jsonl_zips_parallel_files_and_checks_their_lengths():
    spec = {"name": "columns-to-jsonl", "fields": ["sentence1", "sentence2", "label"], "integers": ["label"]}
    out = convert(spec, [b"a b\nc\n", b"d\ne f\n", b"1\n0\n"])
    assert out == b'{"sentence1": "a b", "sentence2": "d", "label": 1}\n{"sentence1": "c", "sentence2": "e f", "label": 0}\n'
    with pytest.raises(EmbenchError, match="different line counts"):
        convert(spec, [b"a\n", b"b\n", b"1\n0\n"])


def test_newsgroups_bydate_takes_subject_and_body_in_group_then_number_order():
    release = _tgz({
        "20news-bydate-test/sci.space/10": b"From: x\nSubject: Re: orbits\n\nBody two\n",
        "20news-bydate-test/sci.space/9": b"Subject: launch\nLines: 1\n\n\n  Body one\n\nmore\n\n",
        "20news-bydate-test/alt.atheism/50": b"Subject: faq\n\nText \xe9\n",  # Latin-1, as the release is
        "20news-bydate-train/alt.atheism/1": b"Subject: not this split\n\nx\n",
    })
    rows = [json.loads(line) for line in convert({"name": "newsgroups-bydate", "folder": "20news-bydate-test"}, [release]).splitlines()]
    assert rows == [
        {"id": "50", "label": "alt.atheism", "subject": "faq", "text": "Text é"},
        {"id": "9", "label": "sci.space", "subject": "launch", "text": "Body one\n\nmore"},
        {"id": "10", "label": "sci.space", "subject": "Re: orbits", "text": "Body two"},
    ]


def test_nltk_lines_strips_brown_tags_and_takes_members_by_pattern():
    package = _zip({"brown/ca02": b"\n\n\tHe/pps said/vbd ./.\n", "brown/ca01": b"\tThe/at jury/nn ./.\n",
                    "brown/README": b"not a text", "brown/cats.txt": b"ca01 news"})
    out = convert({"name": "nltk-lines", "members": "brown/c[a-r][0-9][0-9]", "strip_tags": True}, [package])
    assert out == b"The jury .\nHe said .\n"
    abc = _zip({"abc/rural.txt": b"PM denies it\n\nHe said so.\n"})
    assert convert({"name": "nltk-lines", "members": ["abc/rural.txt"]}, [abc]) == b"PM denies it\nHe said so.\n"
    # the data root's corpora keep lines of 4 to 80 tokens (after Brown's tags are stripped)
    short = _zip({"brown/ca01": b"\tHe/pps said/vbd ./.\n\tThe/at jury/nn said/vbd it/pps ./.\n\t" + b"x/nn " * 81 + b"\n"})
    assert convert({"name": "nltk-lines", "members": "brown/c*", "strip_tags": True, "min_tokens": 4, "max_tokens": 80},
                   [short]) == b"The jury said it .\n"


def test_an_unknown_conversion_names_the_known_ones():
    with pytest.raises(EmbenchError, match=r"unknown conversion 'excel'.*known: .*archive-member"):
        convert({"name": "excel"}, [b""])
    assert {"archive-member", "head-lines", "csv-to-jsonl", "jsonl-fields", "columns-to-jsonl"} <= set(CONVERTERS)
