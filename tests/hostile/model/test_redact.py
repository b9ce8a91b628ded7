"""The redactor alone: every planted shape is hidden in every grammar; behaviour stays visible."""

from __future__ import annotations

import json
import os
import stat
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provenance.model.classes import REDACTED
from provenance.model.redact import (
    KNOWN_NOT_SECRET,
    is_secret_name,
    redact_argv,
    redact_command_text,
    redact_diff,
    redact_record,
    redact_tree,
    redact_value,
    store_key,
)
from tests.hostile import secrets_catalog as cat

VALUES = cat.value_shapes()


@pytest.mark.parametrize("shape", VALUES, ids=[s.label for s in VALUES])
def test_value_shapes_are_hidden_under_a_harmless_name(shape):
    assert shape.secret not in redact_value("VLLM_NOTE", shape.value)


@pytest.mark.parametrize("shape", VALUES, ids=[s.label for s in VALUES])
def test_value_shapes_are_hidden_inside_argv_and_command_text(shape):
    assert shape.secret not in " ".join(redact_argv(["run", "--note", shape.value, "x"]))
    assert shape.secret not in redact_command_text(f"/bin/sh -c 'echo {shape.value}'")


NAMES = cat.name_shapes()


@pytest.mark.parametrize("shape", NAMES, ids=[s.label for s in NAMES])
def test_secret_names_hide_their_values(shape):
    name, _, value = shape.value.partition("=")
    assert redact_value(name, value) == REDACTED
    assert shape.secret not in redact_argv(["env", shape.value])[1]


ARGV = cat.argv_shapes()


@pytest.mark.parametrize("case", ARGV, ids=[c[0] for c in ARGV])
def test_argv_grammar(case):
    _label, argv, secret = case
    out = redact_argv(argv)
    assert secret not in json.dumps(out)
    assert len(out) == len(argv)  # one argument per argument: the command stays readable


def test_argv_keeps_harmless_arguments():
    argv = ["python", "bench.py", "--model", "Qwen/Qwen3-0.6B", "-p", "8080", "-p8080",
            "--max-tokens=128", "TOKENIZERS_PARALLELISM=false", "--out=results.json",
            "https://host:8080/x", "0123456789abcdef0123456789abcdef01234567",
            "/models/Qwen/Qwen3-8B-Instruct-2507", "meta-llama/Llama-3.1-8B-Instruct",
            "--model=/data/hf/models--Qwen--Qwen3-30B-A3B-Instruct-2507/snapshots/0a1b2c",
            "--attention-backend", "FLASH_ATTN", "--kv-cache-dtype=fp8_e4m3",
            "--max-num-batched-tokens", "8192", "--tokenizer-mode", "auto"]
    assert redact_argv(argv) == argv


@pytest.mark.parametrize("name,value", cat.KNOWN_NOT_SECRET)
def test_known_non_secrets_stay_visible(name, value):
    assert redact_value(name, value) == value
    assert redact_argv([f"{name}={value}"]) == [f"{name}={value}"]


def test_every_known_non_secret_name_says_why():
    assert all(len(reason) > 10 for reason in KNOWN_NOT_SECRET.values())
    assert not is_secret_name("TOKENIZERS_PARALLELISM")
    assert is_secret_name("TOKENIZERS_API_KEY")


@pytest.mark.parametrize("case", cat.param_shapes(), ids=[c[0] for c in cat.param_shapes()])
def test_params_and_tags(case):
    name, value, secret = case
    assert secret not in json.dumps(redact_tree({name: value}))


def test_run_fact_under_a_secret_key_and_git_remote_with_slash():
    pw = "ab/cd" + cat.word()
    doc = {"facts": {"runtime": {"openai": {"api_key": "plain-k", "model": "gpt"}}},
           "git": {"remotes": {"origin": f"https://me:{pw}@gh.internal/r.git"}},
           "command": ["x", "--api-key", "plain-a"]}
    out = json.dumps(redact_record(doc))
    for secret in ("plain-k", pw, "plain-a"):
        assert secret not in out
    assert '"model": "gpt"' in out and "gh.internal/r.git" in out


def test_redact_record_is_idempotent():
    doc = {"command": ["x", "--token", "t0k", "-pSECRET"], "tags": {"note": "password xyzzy"}}
    once = redact_record(doc, key=b"k" * 32)
    assert redact_record(once, key=b"k" * 32) == once


def test_keyed_digest_says_differs_without_revealing(tmp_path):
    key = store_key(tmp_path)
    assert stat.S_IMODE(os.stat(tmp_path / "redact.key").st_mode) == 0o600
    assert store_key(tmp_path) == key  # created once, then read
    a, b = redact_value("HF_TOKEN", "one", key), redact_value("HF_TOKEN", "two", key)
    assert a != b and a.startswith("<redacted:hmac:") and "one" not in a
    assert redact_value("HF_TOKEN", "one", key) == a
    other = store_key(tmp_path / "x") if (tmp_path / "x").mkdir() is None else None
    assert redact_value("HF_TOKEN", "one", other) != a  # keyed: another store, another digest


def test_diff_secrets_are_hidden_and_counted():
    secret = "ghp_" + cat.rand(36)
    diff = (f"--- a/x.py\n+++ b/x.py\n@@ -1 +1,2 @@\n-x = 1\n+TOKEN = '{secret}'\n"
            f"+password = \"{cat.word()}\"\n context\n")
    clean, n = redact_diff(diff)
    assert secret not in clean and n == 2
    assert clean.count("\n") == diff.count("\n") and "context" in clean


# ---- properties ---------------------------------------------------------------------------
_TOKEN_CHARS = string.ascii_letters + string.digits
_secret_words = st.text(alphabet=_TOKEN_CHARS, min_size=8, max_size=40).filter(
    lambda s: not s.isdigit() and s not in REDACTED)  # "redacted" is in the marker itself
_prefixes = st.sampled_from(["hf_", "ghp_", "glpat-", "sk_live_", "npm_", "xoxb-1-"])
_names = st.sampled_from(["api-key", "token", "password", "hf-tok", "secret", "auth",
                          "access-token", "client-secret", "api.key", "X-Api-Key"])
_words = st.text(alphabet=string.ascii_lowercase + "-_./", min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(name=_names, secret=_secret_words, before=st.lists(_words, max_size=3),
       style=st.sampled_from(["eq", "space", "env", "header", "json"]))
def test_generated_named_secrets_in_argv_are_always_caught(name, secret, before, style):
    flag = "--" + name
    argv = {"eq": [f"{flag}={secret}"], "space": [flag, secret],
            "env": [f"{name.replace('-', '_').replace('.', '_').upper()}={secret}"],
            "header": ["-H", f"{name}: {secret}"],
            "json": [json.dumps({name: secret})]}[style]
    out = redact_argv([*before, *argv])
    assert secret not in json.dumps(out[len(before):])


@settings(max_examples=300, deadline=None)
@given(prefix=_prefixes, body=st.text(alphabet=_TOKEN_CHARS, min_size=36, max_size=40),
       host=st.from_regex(r"[a-z]{1,10}\.[a-z]{2,5}", fullmatch=True),
       user=st.from_regex(r"[a-z]{1,8}", fullmatch=True),
       password=st.text(alphabet=_TOKEN_CHARS + "/:!$%*", min_size=1, max_size=20))
def test_generated_secrets_in_urls_are_always_caught(prefix, body, host, user, password):
    url = f"https://{user}:{password}@{host}/path?x=1&token={prefix}{body}"
    out = redact_argv(["git", "clone", url])[2]
    assert out.startswith("https://<redacted>@") and prefix + body not in out
    assert host in out  # the host stays: which mirror was used is worth knowing


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from([n for n, _ in cat.KNOWN_NOT_SECRET]),
       value=st.sampled_from(["0", "1", "true", "false", "4", "Ring", "error", "8192"]))
def test_known_non_secrets_are_never_redacted(name, value):
    assert redact_value(name, value) == value


def test_gate_sees_a_changed_secret_through_its_keyed_digest(tmp_path):
    from provenance.collectors.env import collect
    from provenance.model import LeafKind, Manifest
    from provenance.model.diff import diff_manifests

    key = store_key(tmp_path)
    a = Manifest({"env": collect([], {"HF_TOKEN": "tok-one", "OMP_NUM_THREADS": "4"}, key)})
    b = Manifest({"env": collect([], {"HF_TOKEN": "tok-two", "OMP_NUM_THREADS": "4"}, key)})
    same = Manifest({"env": collect([], {"HF_TOKEN": "tok-one", "OMP_NUM_THREADS": "4"}, key)})
    d = diff_manifests(a, b)
    assert [c.key for c in d.of_kind(LeafKind.IDENTITY)] == ["env.HF_TOKEN"]  # "differs"
    assert "tok-one" not in json.dumps(d.to_json()) and "tok-two" not in json.dumps(d.to_json())
    assert diff_manifests(a, same).identical
    # Without a key a secret is only present/absent: the gate cannot tell values apart.
    plain = Manifest({"env": collect([], {"HF_TOKEN": "tok-two", "OMP_NUM_THREADS": "4"})})
    assert plain.facts["env"]["HF_TOKEN"] == REDACTED


_segment = st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=11)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_segment, min_size=1, max_size=8),
       seps=st.lists(st.sampled_from(["/", "-", "_", "."]), min_size=8, max_size=8))
def test_paths_and_model_names_are_never_redacted(parts, seps):
    """Model paths are identity: a path of short segments is kept whatever its case."""
    path = "/" + "".join(p + s for p, s in zip(parts, seps, strict=False))
    assert redact_argv(["--model", path]) == ["--model", path]
    assert redact_value("HF_HOME", path) == path


def test_software_named_like_a_secret_stays_visible():
    """vLLM imports tiktoken: its module and library facts are identity, not secrets (they
    were hidden, and the keyed digests of two private stores then refused a --jobs sweep)."""
    doc = {"facts": {"code": {"modules": {"tiktoken": {"version": "0.12.0"}}},
                     "runtime": {"libs": {"_tiktoken.cpython-312-x86_64-linux-gnu.so": {
                         "build_id": "ab12", "owner": "tiktoken"}}}}}
    assert redact_record(doc, key=b"k" * 32) == doc
    assert is_secret_name("TIKTOKEN_API_KEY") and is_secret_name("tiktoken_token")
    assert not is_secret_name("tiktoken")
