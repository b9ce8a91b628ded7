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


# ---- the memory a JSON document takes (issue #30) ------------------------------------------
def _allocated(text: str) -> int:
    """Bytes json.loads allocates for `text` at its peak (tracemalloc is the oracle)."""
    import tracemalloc

    tracemalloc.start()
    try:
        doc = json.loads(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del doc
    return peak


_SHAPES = {
    "empty objects": lambda n: json.dumps([{}] * n),
    "empty arrays": lambda n: json.dumps([[]] * n),
    "small objects": lambda n: json.dumps([{"a": 1}] * n),
    "nested": lambda n: json.dumps([{"a": []}] * n),
    "unique keys": lambda n: json.dumps({f"{i:x}": 0 for i in range(n)}),
    "short strings": lambda n: json.dumps(["ab"] * n),
    "floats": lambda n: json.dumps([0.123456789] * n),
    "ints": lambda n: json.dumps(list(range(n))),
    "one long string": lambda n: json.dumps("x" * 40 * n),
    "astral escape": lambda n: json.dumps("\U0001F600" + "x" * 40 * n),
    "astral raw": lambda n: json.dumps("\U0001F600" + "x" * 40 * n, ensure_ascii=False),
    "latin and BMP": lambda n: json.dumps(["é", "Ā" * 3] * n, ensure_ascii=False),
}


@pytest.mark.parametrize("shape", list(_SHAPES))
def test_json_memory_bounds_what_the_parser_allocates(shape):
    """The estimate a document is refused by is an upper bound of json.loads's own peak
    (beside the text, which it also counts), for the shapes an attacker would pick."""
    import sys

    from provenance.model.inputs import json_memory

    text = _SHAPES[shape](50_000)
    assert json_memory(text) - sys.getsizeof(text) >= _allocated(text)


def test_a_json_document_over_the_memory_bound_is_refused_in_one_line():
    from provenance.model.inputs import MAX_JSON_MEMORY

    text = json.dumps([{}] * (MAX_JSON_MEMORY // 160 + 1))  # ~2.4 MB of text
    with pytest.raises(InputError, match="in memory once parsed") as exc:
        parse_json(text, "x")
    assert len(str(exc.value).splitlines()) == 1


@pytest.mark.parametrize("text", ["abc", "é" * 10, "Ā" * 10, "\U0001F600" + "x" * 10,
                                  "x" * 10 + "é" + "\u20ac"])
def test_text_memory_is_what_the_decoded_string_takes(text):
    """Judged from the bytes, before decoding: CPython's own size of the decoded string."""
    import sys

    from provenance.model.inputs import text_memory

    data = text.encode()
    overhead = sys.getsizeof("") if text.isascii() else sys.getsizeof("é") - 1
    assert text_memory(data) >= sys.getsizeof(data.decode()) - overhead - 8


def test_many_open_quotes_are_skipped_in_one_pass():
    """An unterminated string runs to the end (`"\\"` repeated: each quote used to start a
    scan to the end of the text); the document is still refused as malformed JSON."""
    with pytest.raises(InputError, match="not JSON"):
        parse_json('"\\"' * 200_000, "x")


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
