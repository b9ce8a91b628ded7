"""Planted secrets never reach any surface prov writes or prints (issue #19 section 1, issue
#30's fresh pass).

One real `prov exec` with every planted shape in its environment, argv, tags, params and run
name (secrets_catalog.py's and fresh_secrets.py's), in a git checkout whose remote URL
carries a password with `/` and whose working tree adds a PEM private key and a known value
to a tracked file; the program echoes every planted value to stdout and stderr, writes them
into facts.json and a run-dir file. Then every reader: `prov show --json`, `prov runs
--json`, the stored logs (`prov show --cat`), `prov report`, `prov sbom --run`, `prov
publish --run` (directory bundle and .tar.gz), `prov snapshot` (and its cache), and a bytes
grep of the whole store (objects, records, the SQLite index and its WAL) and every output
file. The one thing prov may keep is what the log policy says it cannot know
(docs/guides/exec.md, "What the logs keep"): a secret the program read from a file and
printed without a telling shape or name.
"""

from __future__ import annotations

import gzip
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.helpers import assert_one_line_error, run_prov
from tests.hostile import fresh_secrets as fresh
from tests.hostile import secrets_catalog as cat

ENV_SHAPES = cat.value_shapes()
NAME_SHAPES = cat.name_shapes()
ARGV_SHAPES = cat.argv_shapes()
PARAM_SHAPES = cat.param_shapes()
REMOTE_PASSWORD = "rem/ote" + cat.word()
ALLOW_FAILURES = False  # the leak census runs this against old checkouts too
FRESH = fresh.fresh()
RUN_NAME_SECRET = fresh.word(12)
DIFF_KEY, DIFF_KEY_LINE = fresh.pem_body("EC PRIVATE KEY", 6)
UNKNOWABLE = "zq" + fresh.word(9)  # read from a file and printed: the log policy's limit
ECHO = "ECHO "  # the program's own echo lines: its terminal output, not a prov surface


def planted() -> tuple[dict[str, str], list[str], list[str], list[tuple[str, str]]]:
    """(env, argv, prov options, [(label, secret)])"""
    env, secrets = {}, []
    for i, s in enumerate(ENV_SHAPES):
        env[f"VLLM_HOSTILE_{i}"] = s.value
        secrets.append((f"env {s.label}", s.secret))
    for s in NAME_SHAPES:
        name, _, value = s.value.partition("=")
        env[name] = value
        secrets.append((f"env name {s.label}", s.secret))
    argv = []
    for label, args, secret in ARGV_SHAPES:
        argv += args
        secrets.append((f"argv {label}", secret))
    options = []
    for name, value, secret in PARAM_SHAPES:
        options += ["--param", f"{name}={value}", "--tag", f"{name}={value}"]
        secrets.append((f"param/tag {name}", secret))
    secrets.append(("git remote password with /", REMOTE_PASSWORD))
    fresh_env, fresh_argv, fresh_options, fresh_secrets = planted_fresh()
    env.update(fresh_env)
    return env, argv + fresh_argv, options + fresh_options, secrets + fresh_secrets


def planted_fresh() -> tuple[dict[str, str], list[str], list[str], list[tuple[str, str]]]:
    """issue #30's fresh shapes: env values under harmless recorded names, secret names,
    tags and params, the run name, and every argv shape as one command of an `sh -c` script
    (each shape is a command line of its own: its program decides its grammar)."""
    env, scripts, options, secrets = {}, [], [], []
    for i, p in enumerate(FRESH):
        secrets.append((f"fresh {p.where} {p.label}", p.secret))
        if p.where == "env":
            env[f"VLLM_FRESH_{i}"] = str(p.planted)
        elif p.where == "env-name":
            env[p.name] = str(p.planted)
        elif p.where == "tag":
            options += ["--tag", f"{p.name}={p.planted}", "--param", f"{p.name}={p.planted}"]
        else:
            scripts.append(shlex.join(p.planted))
    options += ["--name", f"nightly sync, db password {RUN_NAME_SECRET}"]
    secrets.append(("fresh run name", RUN_NAME_SECRET))
    secrets.append(("fresh PEM key added in the git diff", DIFF_KEY_LINE))
    return env, ["sh", "-c", " ; ".join(scripts)], options, secrets


def test_catalogue_covers_the_issue():
    *_, secrets = planted()
    assert len(secrets) >= 69  # + diff, run fact and image config cases elsewhere: 73


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    return plant_and_read(tmp_path_factory.mktemp("secrets"))


def plant_and_read(tmp):
    """One planted run, read back through every surface: (tmp, surface texts, secrets)."""
    env, argv, options, secrets = planted()
    work = tmp / "work"
    work.mkdir()
    git = ["git", "-C", str(work)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "remote", "add", "origin",
                    f"https://me:{REMOTE_PASSWORD}@git.internal/org/repo.git"], check=True)
    full_env = {**env, "PROV_STORE": str(tmp / "store"), "PROV_CACHE_DIR": str(tmp / "cache"),
                "GIT_AUTHOR_NAME": "t",
                "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    _dirty_tree(work)
    (work / "unknowable.txt").write_text(UNKNOWABLE + "\n")
    p = run_prov("exec", "-q", "-o", "out.json", *options, "--", "python3", "-c", PROGRAM,
                 *argv, env=full_env, cwd=work)
    assert p.returncode == 0, p.stderr
    runs = json.loads(run_prov("runs", "--json", env=full_env, cwd=work, check=True).stdout)
    run_id = (runs if isinstance(runs, list) else runs["runs"])[0]["run_id"]
    own = "".join(line for line in (p.stdout + p.stderr).splitlines(keepends=True)
                  if not line.startswith(ECHO))  # prov's own lines
    texts = {"exec": own, "runs --json": json.dumps(runs)}
    for label, args in {
        "show --json": ["show", run_id, "--json"],
        "show": ["show", run_id],
        "show --cat stdout": ["show", run_id, "--cat", "stdout"],
        "show --cat stderr": ["show", run_id, "--cat", "stderr"],
        "report": ["report", run_id, "--out", str(tmp / "report.html")],
        "sbom --run": ["sbom", "--run", run_id],
        "publish dir": ["publish", "out.json", "--run", run_id, "--out", str(tmp / "b")],
        "publish tar.gz": ["publish", "out.json", "--run", run_id, "--out",
                           str(tmp / "b.tar.gz")],
        "snapshot --json": ["snapshot", "--json"],
    }.items():
        r = run_prov(*args, env=full_env, cwd=work)
        if not ALLOW_FAILURES:
            assert r.returncode == 0, (label, r.stderr)
        texts[label] = r.stdout + r.stderr
    return tmp, texts, secrets


# The program under prov exec: echoes every planted value it was given (environment and
# argv) to stdout and stderr, puts them into facts.json under harmless keys and into a
# run-dir file, prints what it read from a file, and writes a clean result.
PROGRAM = r"""
import json, os, sys
planted = [v for k, v in sorted(os.environ.items()) if k.startswith(("VLLM_", "HF_", "TORCH_",
           "NCCL_", "CUDA_", "TRANSFORMERS_", "OMP_", "MKL_", "PIP_", "RAY_", "CONDA_"))]
planted += sys.argv[1:]
for value in planted:
    for line in value.splitlines() or [""]:
        print("ECHO " + line)
        print("ECHO " + line, file=sys.stderr)
run_dir = os.environ["PROV_RUN_DIR"]
json.dump({"runtime": {"app": {"notes": planted[:40], "model": "gpt-x"}}},
          open(os.path.join(run_dir, "facts.json"), "w"))
open(os.path.join(run_dir, "notes.txt"), "w").write(chr(10).join(planted))
print("ECHO read from a file: " + open("unknowable.txt").read().strip())
open("out.json", "w").write('{"metric": "x", "value": 1}')
"""


def _dirty_tree(work: Path) -> None:
    """A committed file, then changed in the working tree: a PEM private key added whole
    (the diff's `+` lines), and a value the run knows to be secret (an env value hidden by
    its name) under a harmless key."""
    cfg = work / "deploy.conf"
    cfg.write_text("x = 1\n")
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run([*git, "add", "deploy.conf"], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    by_value = next(p for p in FRESH if p.where == "env-name").planted
    cfg.write_text(f"x = 1\n{DIFF_KEY}endpoint_note = {by_value}\n")


def _files(root):
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            yield os.path.join(dirpath, f)


def printed_leaks(texts, secrets) -> list[tuple[str, str]]:
    return [(surface, label) for surface, text in texts.items() for label, secret in secrets
            if secret in text]


def test_no_secret_on_any_printed_surface(published):
    _tmp, texts, secrets = published
    assert not printed_leaks(texts, secrets)


def test_no_secret_in_any_stored_or_published_byte(published):
    tmp, _texts, secrets = published
    assert not stored_leaks(tmp, secrets)


def stored_leaks(tmp, secrets) -> list[tuple[str, str]]:
    blobs = {}
    for path in _files(tmp):
        if "/work/.git/" in path:  # the user's own git config holds the URL they typed
            continue
        if path.endswith(("/work/deploy.conf", "/work/unknowable.txt")):  # the user's files
            continue
        data = Path(path).read_bytes()
        if path.endswith(".tar.gz"):
            data += gzip.decompress(data)
        blobs[path] = data
    assert any("/store/objects/" in p for p in blobs)  # the store was really written
    assert any(p.endswith("sbom.cdx.json") for p in blobs)
    assert any("/cache/" in p for p in blobs)  # the snapshot cache was written too
    assert any(p.endswith("index.sqlite") for p in blobs)  # the SQLite index, read as bytes
    assert any(p.endswith("report.html") for p in blobs)
    return [(os.path.relpath(path, tmp), label) for path, data in blobs.items()
            for label, secret in secrets if secret.encode() in data]


def test_behaviour_variables_stay_visible(tmp_path):
    env = {name: value for name, value in cat.KNOWN_NOT_SECRET}
    p = run_prov("snapshot", "--json", env=env, check=True)
    recorded = json.loads(p.stdout)["env"]
    for name, value in cat.KNOWN_NOT_SECRET:
        if name in recorded:
            assert recorded[name] == value, name
    assert recorded["TOKENIZERS_PARALLELISM"] == "false"


def test_a_secret_in_a_dirty_diff_is_redacted_and_flagged(tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    git = ["git", "-C", str(work)]
    ident = ["-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run([*git, "init", "-q"], check=True)
    (work / "conf.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, *ident, "commit", "-qm", "c"], check=True)
    secret = "ghp_" + cat.rand(36)
    (work / "conf.py").write_text(f"x = 1\nGITHUB_TOKEN = '{secret}'\n")
    env = {"PROV_STORE": str(tmp_path / "store")}
    assert run_prov("exec", "-q", "--", "true", env=env, cwd=work).returncode == 0
    stored = b"".join(Path(p).read_bytes() for p in _files(tmp_path / "store"))
    assert secret.encode() not in stored
    runs = json.loads(run_prov("runs", "--json", env=env, cwd=work, check=True).stdout)
    rid = (runs if isinstance(runs, list) else runs["runs"])[0]["run_id"]
    record = json.loads(run_prov("show", rid, "--json", env=env, cwd=work, check=True).stdout)
    assert record["git"].get("diff_secrets_redacted", 0) >= 1


def test_a_run_fact_under_a_secret_key_is_redacted(tmp_path):
    secret = cat.word(14)
    fact = {"runtime": {"openai": {"api_key": secret, "model": "gpt-x"}}}
    script = (f"import json, os; json.dump({fact!r}, open(os.path.join("
              "os.environ['PROV_RUN_DIR'], 'facts.json'), 'w'))")
    env = {"PROV_STORE": str(tmp_path / "store")}
    p = run_prov("exec", "-q", "--", "python3", "-c", script, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    stored = b"".join(Path(f).read_bytes() for f in _files(tmp_path / "store"))
    assert b"gpt-x" in stored  # the fact was recorded
    assert secret.encode() not in stored


def test_fresh_suite_is_thirty_shapes_beyond_the_issue(published):
    _tmp, _texts, secrets = published
    assert len([label for label, _ in secrets if label.startswith("fresh")]) >= 30


def test_logs_keep_only_what_prov_cannot_know(published):
    """The stored logs hold the program's echo lines with every planted value hidden (by
    value: the env and argv values prov hid; by shape), and, as the log policy says, what
    the program read from a file and printed without a telling shape or name."""
    _tmp, texts, _secrets = published
    for stream in ("show --cat stdout", "show --cat stderr"):
        assert texts[stream].count(ECHO) > 100  # the echo lines were stored
        assert "<redacted" in texts[stream]
    assert f"read from a file: {UNKNOWABLE}" in texts["show --cat stdout"]


def test_a_key_block_in_the_diff_is_hidden_whole(published):
    tmp, texts, _secrets = published
    record = json.loads(texts["show --json"])
    assert record["git"]["dirty"] and record["git"].get("diff_secrets_redacted", 0) >= 2
    stored = b"".join(Path(p).read_bytes() for p in _files(tmp / "store"))
    body = [line for line in DIFF_KEY.splitlines() if not line.startswith("-----")]
    assert len(body) == 6 and not [line for line in body if line.encode() in stored]


def test_a_result_holding_a_secret_of_the_environment_is_not_published(tmp_path):
    """A result is signed as written, so prov cannot redact it: a result holding a value
    prov hides from the publishing environment (here by its name) is refused, in one line
    that does not repeat the value; without it in the environment it is published."""
    from provenance.model import Manifest

    manifest = tmp_path / "m.json"
    manifest.write_text(Manifest({"python": {"version": "3.11.2", "packages": {}}}).to_json())
    secret = cat.word(12)
    result = tmp_path / "result.json"
    result.write_text(json.dumps({"metric": "x", "value": 1, "note": secret}))
    args = ["publish", str(result), "--manifest", str(manifest), "--out", str(tmp_path / "b")]
    env = {"PROV_STORE": str(tmp_path / "store")}
    err = assert_one_line_error(run_prov(*args, env={**env, "APP_DB_PASSWORD": secret}))
    assert "refusing to publish result.json" in err and secret not in err
    assert not (tmp_path / "b").exists()
    assert run_prov(*args, env=env).returncode == 0
