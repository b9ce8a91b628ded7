"""model/inputs: the one reader of user files, and its properties."""

from __future__ import annotations

import json
import os
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provenance.model.atomic import write_atomic
from provenance.model.inputs import (
    MAX_DEPTH,
    InputError,
    check_output,
    parse_json,
    parse_toml,
    read_input,
    read_json,
    read_text,
    shown,
)


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    done = []
    t = threading.Thread(target=lambda: done.append(pytest.raises(InputError, read_input, fifo)))
    t.start()
    t.join(5)
    assert done, "reading a FIFO blocked"
    assert "FIFO" in str(done[0].value)


@pytest.mark.parametrize("path,what", [("/dev/zero", "character device"), ("/", "directory")])
def test_devices_and_directories_are_refused(path, what):
    with pytest.raises(InputError, match=what):
        read_input(path, "manifest")


def test_size_bound_is_checked_before_reading(tmp_path):
    sparse = tmp_path / "s"
    with open(sparse, "wb") as fh:
        fh.truncate(3 << 30)
    with pytest.raises(InputError, match="over the"):
        read_input(sparse, "manifest")


def test_strict_decoding_and_safe_names(tmp_path):
    (tmp_path / "u16").write_bytes("a = 1".encode("utf-16"))
    with pytest.raises(InputError, match="UTF-16"):
        read_text(tmp_path / "u16")
    bad = os.fsdecode(os.fsencode(str(tmp_path)) + b"/x\xff.json")
    with open(bad, "wb") as fh:
        fh.write(b"\xc3(")
    with pytest.raises(InputError) as exc:
        read_json(bad)
    message = str(exc.value)
    message.encode("utf-8")  # printable: no surrogate escapes reach the terminal
    assert "\\xff" in message and len(message.splitlines()) == 1
    assert shown("a\nb") == "a\\nb"


@pytest.mark.parametrize("doc", ['{"a":' * 100_000 + "1" + "}" * 100_000,
                                 "[" * 100_000 + "]" * 100_000])
def test_deep_json_is_one_line_not_recursion_error(doc):
    with pytest.raises(InputError, match="nested deeper"):
        parse_json(doc, "x")


def test_deep_toml_is_one_line_not_recursion_error():
    with pytest.raises(InputError, match="nested deeper"):
        parse_toml("a = " + "[" * 100_000 + "]" * 100_000, "x")


def test_brackets_inside_strings_do_not_count():
    assert parse_json(json.dumps({"s": "[" * 1000}), "x") == {"s": "[" * 1000}
    assert parse_toml('s = "' + "{" * 1000 + '"\n# ' + "[" * 1000, "x") == {"s": "{" * 1000}


@settings(max_examples=200, deadline=None)
@given(depth=st.integers(1, 3 * MAX_DEPTH), kind=st.sampled_from(["[", "{\"k\":"]))
def test_json_reader_never_raises_anything_but_input_error(depth, kind):
    close = "]" if kind == "[" else "}"
    doc = kind * depth + "1" + close * depth
    try:
        parse_json(doc, "x")
    except InputError:
        assert depth > MAX_DEPTH


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200))
def test_toml_and_json_readers_fail_only_with_input_error(text):
    for parse in (parse_json, parse_toml):
        try:
            parse(text, "x")
        except InputError as exc:
            assert len(str(exc).splitlines()) == 1 or "\n" in text


def test_out_never_replaces_a_device_or_a_directory(tmp_path):
    (tmp_path / "d").mkdir()
    for target in (tmp_path / "d", "/dev/null", tmp_path / "missing" / "x"):
        with pytest.raises(InputError):
            write_atomic(target, "x")
    assert (tmp_path / "d").is_dir() and os.path.exists("/dev/null")
    f = tmp_path / "f"
    f.write_text("old")
    with pytest.raises(InputError, match="not a directory"):
        check_output(f / "x")
    write_atomic(f, "new")  # a regular file is replaced
    assert f.read_text() == "new"


@pytest.mark.parametrize("text,needle", [
    ('{"a": "\\udcff"}', "lone UTF-16 surrogate"),
    ('{"\\ud800": 1}', "lone UTF-16 surrogate"),
    ('{"a": [1, "x\\ude00"]}', "lone UTF-16 surrogate"),
    ('{"n": ' + "9" * 5000 + "}", "an integer of more than 4300 digits"),
])
def test_json_that_python_cannot_carry_is_one_line(text, needle):
    """A lone surrogate (valid JSON syntax, not Unicode) and a 5,000-digit integer (past
    Python's int-str limit) are refused where they are read, never met later by a writer."""
    with pytest.raises(InputError, match=needle):
        parse_json(text, "doc")


def test_a_surrogate_pair_is_one_character_and_passes():
    assert parse_json('{"a": "\\ud83d\\ude00", "b": "\\\\ud800"}', "doc") == {
        "a": "\U0001f600", "b": "\\ud800"}  # an escaped backslash is no surrogate


def test_toml_with_a_5000_digit_integer_is_one_line():
    with pytest.raises(InputError, match="more than 4300 digits"):
        parse_toml("n = " + "9" * 5000 + "\n", "doc")


@pytest.mark.parametrize("suffix,body", [
    (".json", '"x": {"s": "\\udcff"}'), (".json", '"x": {"n": ' + "9" * 5000 + "}"),
    (".toml", "\n[x]\nn = " + "9" * 5000 + "\n")])
def test_a_manifest_python_cannot_carry_is_a_manifest_error(tmp_path, suffix, body):
    from provenance.model import Manifest, ManifestError
    from tests.provenance.model.test_manifest import sample

    path = tmp_path / f"m{suffix}"
    m = sample()
    text = m.to_json() if suffix == ".json" else m.to_toml()
    path.write_text(text.replace("{", "{" + body + ",", 1) if suffix == ".json" else text + body)
    with pytest.raises(ManifestError, match="corrupted manifest") as err:
        Manifest.read(path)
    assert "\n" not in str(err.value)
