"""Redaction that generalizes (issue #30): the redactor alone, on shapes neither issue lists
(fresh_secrets.py), by value (KnownSecrets), by structure, by grammar; what is kept; and
input of any size redacted in one linear pass (times live in bench/bench_redact.py)."""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provenance.model import secret_names
from provenance.model.redact import (
    KnownSecrets,
    is_secret_name,
    redact_argv,
    redact_command_text,
    redact_diff,
    redact_text,
    redact_tree,
    redact_value,
    secrets_of_run,
)
from tests.hostile import fresh_secrets as fresh

FRESH = fresh.fresh()


def _redacted(p: fresh.Planted) -> str:
    if p.where == "env":
        return redact_value("VLLM_FRESH", str(p.planted))
    if p.where == "env-name":
        return redact_value(p.name, str(p.planted))
    if p.where == "argv":
        return json.dumps(redact_argv(list(p.planted)), ensure_ascii=False)
    return json.dumps(redact_tree({p.name: p.planted}), ensure_ascii=False)


@pytest.mark.parametrize("planted", FRESH, ids=[p.label for p in FRESH])
def test_fresh_shapes_are_hidden_where_they_are_planted(planted):
    assert planted.secret not in _redacted(planted)


@pytest.mark.parametrize("planted", [p for p in FRESH if p.where == "env"],
                         ids=[p.label for p in FRESH if p.where == "env"])
def test_fresh_value_shapes_are_hidden_in_any_text(planted):
    """The same values inside a log line, a `sh -c` script and a JSON argument."""
    value = str(planted.planted)
    assert planted.secret not in redact_text(f"INFO worker 3: config {value} loaded\n")
    assert planted.secret not in redact_argv(["sh", "-c", f"run --note {value!r}"])[2]
    assert planted.secret not in redact_argv(["tool", json.dumps({"note": value})])[1]


def test_the_fresh_suite_is_thirty_shapes_beyond_the_issue():
    assert len({p.label for p in FRESH}) == len(FRESH) >= 30


# ---- by value ------------------------------------------------------------------------------

def test_a_value_hidden_in_the_environment_is_hidden_wherever_it_recurs():
    known = secrets_of_run({"DB_PASSWORD": "tr0ub4dor", "HOME": "/root"},
                           ["serve", "--token", "s3cr3t-word"],
                           {"note": "plain", "api_key": "label-secret-1"})
    log = "connecting with tr0ub4dor, token s3cr3t-word, label label-secret-1 from /root\n"
    assert redact_text(log, known=known) == (
        "connecting with <redacted>, token <redacted>, label <redacted> from /root\n")
    diff, n = redact_diff("+endpoint = 'tr0ub4dor'\n context\n", known=known)
    assert "tr0ub4dor" not in diff and n == 1
    assert redact_tree({"a": ["x tr0ub4dor y"]}, known=known) == {"a": ["x <redacted> y"]}


def test_a_name_alone_does_not_make_an_ordinary_word_a_known_value():
    """XDG_SESSION_DESKTOP=ubuntu is hidden (SESSION is a secret word) and so is
    `./deploy.sh -p production`, but `ubuntu` and `production` are not then removed from
    every log; a value that is not an ordinary word, or has 12+ characters, is."""
    known = secrets_of_run({"XDG_SESSION_DESKTOP": "ubuntu", "APP_PASSWORD": "hunter2",
                            "SESSION_NAME": "correcthorsebattery"},
                           ["./deploy.sh", "-p", "production", "-a", "Staging-Eu"])
    assert redact_text("ubuntu 22.04 production Staging-Eu", known=known) == (
        "ubuntu 22.04 production Staging-Eu")
    assert redact_text("pw hunter2 and correcthorsebattery", known=known) == (
        "pw <redacted> and <redacted>")
    shaped = secrets_of_run({"VLLM_NOTE": "hf_" + fresh.rand(34)}, [])
    assert len(shaped) == 1  # found by its shape: kept whatever it looks like


def test_a_list_of_numbers_is_never_a_known_value():
    known = KnownSecrets()
    known.add("[-0.5, -0.5, -0.5]", by_name=True)
    known.add("[1,2,3,4,5,6,7,8]")
    assert len(known) == 0
    doc = '{"logprobs":[-0.5, -0.5, -0.5]}'
    assert json.loads(known.hide_in(doc, b"k" * 32)) == {"logprobs": [-0.5] * 3}


def test_known_values_overlapping_are_hidden_together_and_bytes_too():
    known = KnownSecrets()
    for v in ("abcdef12", "ef12ghij", "zzzzzz99"):
        known.add(v)
    assert known.hide_in("x abcdef12ghij y zzzzzz99") == "x <redacted> y <redacted>"
    assert known.spans(b"abcdef12ghij") == [(0, 12)]
    known.add("user:pa55word")  # a user:password value: its password is known alone too
    assert known.hide_in("pa55word") == "<redacted>"


# ---- by structure --------------------------------------------------------------------------

def test_a_pem_block_in_a_diff_is_hidden_as_one_block():
    block, line = fresh.pem_body("RSA PRIVATE KEY", 8)
    diff = "--- a/k\n+++ b/k\n@@ -0,0 +1,10 @@\n" + "".join(
        f"+{row}\n" for row in block.splitlines()) + " context line\n"
    clean, n = redact_diff(diff)
    assert line not in clean and n >= 1
    assert clean.endswith(" context line\n") and "<redacted>" in clean
    assert all(row not in clean for row in block.splitlines()[1:-1])


@pytest.mark.parametrize("url,password", [
    ("https://me:p@ss/w0rd@host.internal/x", "p@ss/w0rd"),
    ("postgresql://app:a:b@c@db.internal:5432/x", "a:b@c"),
    ("https://me://x@host.internal/", "//x"),
    ("mongodb://u:pw0rd99@h1.internal:27017,h2.internal:27017/?replicaSet=rs", "pw0rd99"),
])
def test_url_user_info_is_found_as_a_url_parser_finds_its_host(url, password):
    out = redact_text(url)
    assert password not in out and "<redacted>@" in out


def test_what_is_kept_digests_uuids_versions_paths_models():
    kept = [
        "torch==2.5.1+cu124", "sha256:" + "ab12" * 16, "e3b0c44298fc1c149afbf4c8996fb924"
        "27ae41e4649b934ca495991b7852b855", "FVYRMQVXE2YEIALCPSU7XLBS6XEFGD5RSA6MJWYCEWDRPEQ2JCAQ",
        "GPU-5fa1c3f0-8a2b-4c1d-9e3f-0123456789ab", "vllm/vllm-openai:v0.11.0@sha256:" + "0f" * 32,
        "/root/.cache/huggingface/hub/models--Qwen--Qwen3-0.6B/snapshots/"
        "c1899de289a04d12100db370d81485cdf75e47ca/config.json",
        "git+https://github.com/org/repo.git@c1899de289a04d12100db370d81485cdf75e47ca",
        "INFO [core.py:123] max_num_batched_tokens=8192 kv_cache_dtype=fp8_e4m3 seed=42",
        "token_ids=[1, 2, 3] num_tokens=17 tokenizer=Qwen/Qwen3-0.6B",
        '{"tokens":["the","cat"],"token_logprobs":[-0.51,-0.52],"text_offset":[0,3]}',
        "models/Qwen/Qwen3/snapshots/c1899de289a04d12", "s.getAttributeByNameLonger",
        "user@host.example.com", "git@github.com:org/repo.git", "--password-stdin",
        "PASSWORD_FILE=/run/secrets/db", "meta-llama/Llama-3.1-8B-Instruct",
    ]
    assert [t for t in kept if redact_text(t) != t] == []


# ---- by grammar ----------------------------------------------------------------------------

@pytest.mark.parametrize("argv,hidden", [
    (["docker", "login", "-u", "me", "-p", "PW1secret", "reg.io"], "PW1secret"),
    (["sshpass", "-p", "PW1secret", "ssh", "-p", "2222", "h"], "PW1secret"),
    (["sqlcmd", "-S", "db", "-U", "sa", "-P", "PW1secret"], "PW1secret"),
    (["redis-cli", "-a", "PW1secret", "ping"], "PW1secret"),
    (["mysql", "-uroot", "-pPW1secret", "db"], "PW1secret"),
    (["sh", "-c", "curl -u me:PW1secret https://x.io"], "PW1secret"),
    (["tool", "--pw", "PW1secret"], "PW1secret"),
    (["vault", "login", "PW1secretTOKEN"], "PW1secretTOKEN"),
    (["aws", "configure", "set", "aws_secret_access_key", "PW1secret"], "PW1secret"),
    (["python3", "-c", "from openai import Client; Client(api_key='PW1secret')"], "PW1secret"),
    (["node", "--eval", "new Client({apiKey: 'PW1secret'})"], "PW1secret"),
    (["./deploy.sh", "-p", "hunter"], "hunter"),
    (["./deploy.sh", "-P", "hunter"], "hunter"),
    (["./deploy.sh", "-a", "hunter"], "hunter"),
    (["python", "train.py", "-p", "hunter"], "hunter"),
    (["sudo", "-u", "root", "./backup", "-p", "hunter"], "hunter"),
    (["bash", "-c", "PGPASSWORD=hunter22 psql -h db && echo done"], "hunter22"),
])
def test_secret_taking_options_and_subcommands(argv, hidden):
    out = redact_argv(argv)
    assert hidden not in json.dumps(out) and len(out) == len(argv)


@pytest.mark.parametrize("argv", [
    ["ssh", "-p", "2222", "host"], ["scp", "-P", "2222", "a", "h:b"],
    ["docker", "run", "-p", "8080:80", "-a", "stdout", "img"], ["mkdir", "-p", "out/dir"],
    ["tar", "-pxf", "x.tar"], ["gcc", "-pthread", "-pipe", "x.c"],
    ["python3", "-P", "train.py", "--seed", "1"],
    ["python", "-m", "pytest", "-p", "no:cacheprovider", "-p", "xdist"],
    ["git", "add", "-p", "src"], ["ls", "-a", "dir"],
    ["python", "train.py", "-p", "4", "-P", "8080", "-a", "./cfg.yaml"],
    ["./bench.sh", "-p", "0.0.0.0:8000"], ["./bench.sh", "-p", "-v"],
    ["vllm", "serve", "Qwen/Qwen3-0.6B", "--port", "8000", "--seed", "0"],
    ["xargs", "-P", "4", "cmd"], ["docker", "login", "reg.internal"],
    ["sh", "-c", "echo hello | tee out.txt"],
    ["sh", "-c", "docker login -u me --password-stdin reg.internal < pw.txt"],
])
def test_options_that_are_not_secrets_are_kept(argv):
    """The rule for -p/-P/-a (secret_argv.py): hidden for a program prov does not know,
    unless the value is a number, port, address, path or option; programs known to use
    these letters for something else keep them."""
    assert redact_argv(argv) == argv


def test_a_history_line_is_redacted_as_its_shell_runs_it():
    line = "RUN /bin/sh -c sshpass -p PW1secret scp x h.internal:/srv &&  echo ok # buildkit"
    out = redact_command_text(line)
    assert "PW1secret" not in out and out.endswith("&&  echo ok # buildkit")
    args = "|2 NPM_TOKEN=tok1secret2 MODE=fast /bin/sh -c npm ci"
    assert redact_command_text(args) == "|2 NPM_TOKEN=<redacted> MODE=fast /bin/sh -c npm ci"


# ---- names ---------------------------------------------------------------------------------

def test_every_secret_word_holds_a_stem_the_text_rules_look_for():
    stems = secret_names.NAME_STEMS
    words = (set(secret_names._SECRET_WORDS) | set(secret_names._WEAK_SECRET_WORDS)
             | set(secret_names.SECRET_INFIXES))
    assert [w for w in words if not any(s in w.lower() for s in stems)] == []


@pytest.mark.parametrize("name,secret", [
    ("token_ids", False), ("num_tokens", False), ("TOKEN_COUNT", False),
    ("--password-stdin", False), ("PASSWORD_FILE", False), ("HF_TOKEN_PATH", False),
    ("VLLM_WALLET_MNEMONIC", True), ("auth_token_ids", True), ("sessionToken", True),
    ("X-Auth-Token", True), ("keyStorePassword", True),
    # the OpenAI completions API's logprobs fields score tokens, they hold none
    ("token_logprobs", False), ("tokenLogprobs", False), ("token_bytes", False),
    ("token_str", False), ("token", True), ("TOKEN_SECRET", True),
])
def test_secret_names(name, secret):
    assert is_secret_name(name) is secret


# ---- size and time -------------------------------------------------------------------------
_ONE_MB = 1 << 20


@pytest.mark.parametrize("text", [
    "a1" * (_ONE_MB // 2), string.ascii_letters * (_ONE_MB // 52), "key=1 " * (_ONE_MB // 6),
    "a/b@c " * (_ONE_MB // 6), "%41b" * (_ONE_MB // 4), "-----BEGIN PRIVATE KEY-----" * 40000,
    "https://" * (_ONE_MB // 8), "@:" * (_ONE_MB // 2), "x" * _ONE_MB,
], ids=["a1", "letters", "dense key=1", "oracle-like", "percent", "pem begins", "schemes",
        "at-colon", "one letter"])
def test_one_megabyte_of_hostile_text_completes(text):
    """Linear rules finish on 1 MB of any of these (a quadratic rule would not: 20k
    characters took 286 s before issue #30); the times are in bench/bench_redact.py."""
    out = redact_text(text)
    assert isinstance(out, str) and out.count("\n") == text.count("\n")


def test_one_megabyte_argv_word_and_value_complete():
    word = "Qz7" * (_ONE_MB // 3)  # (not "Ab1": A, b and 1 are hex digits, a digest's)
    assert redact_argv(["x", "--name", word])[2] == "<redacted>"
    assert redact_value("VLLM_X", "a1" * 60_000) == "a1" * 60_000


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=string.printable + "éп@:/=%", max_size=300))
def test_redaction_is_idempotent_on_any_text(text):
    once = redact_text(text)
    assert redact_text(once) == once
