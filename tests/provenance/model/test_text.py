"""model/text: what the OS hands prov that is not UTF-8, kept in records as `\\xNN`.

Oracle: Python's own `backslashreplace` decoding of the raw bytes, and the standard
library's json and tomllib reading back what prov wrote."""

from __future__ import annotations

import json
import os
import tomllib

from hypothesis import given, settings
from hypothesis import strategies as st

from provenance.model import Manifest
from provenance.model.text import escape_surrogates, json_text, without_surrogates

BUDGET = settings(max_examples=200, deadline=None, derandomize=True)


@BUDGET
@given(st.binary(max_size=64))
def test_a_name_is_spelled_as_backslashreplace_spells_its_bytes(raw):
    name = os.fsdecode(raw)  # what os.listdir, sys.argv, os.environ hand prov
    assert escape_surrogates(name) == raw.decode("utf-8", "backslashreplace")
    escape_surrogates(name).encode("utf-8")  # always encodable


@BUDGET
@given(st.dictionaries(st.binary(max_size=8).map(os.fsdecode),
                       st.binary(max_size=16).map(os.fsdecode), max_size=5))
def test_json_text_is_valid_json_of_the_spelled_document(doc):
    text = json_text(doc, sort_keys=True)
    assert json.loads(text.encode("utf-8")) == without_surrogates(doc)


def test_a_manifest_with_odd_bytes_writes_and_reads_back_with_its_digest(tmp_path):
    odd = os.fsdecode(b"v\xff\xfe")
    m = Manifest({"env": {"VLLM_ODD": odd, os.fsdecode(b"K\xff"): "1"},
                  "python": {"version": "3.11"}})
    digest = m.digest()
    for fmt in ("json", "toml"):
        path = tmp_path / f"m.{fmt}"
        m.write(path, fmt)
        back = Manifest.read(path)  # verifies the recorded digest against the content
        assert back.digest() == digest
        assert back.facts["env"]["VLLM_ODD"] == "v\\xff\\xfe"
    assert tomllib.loads((tmp_path / "m.toml").read_text())["env"]["K\\xff"] == "1"
