"""The user-program rows, run for real: programs written as users write them, each row two
`prov exec` runs of one program with one change between them.

The oracle is the program's own output (the bytes of the file it wrote); the test asserts
prov's verdict agrees with it (0 missed causes, 0 noise), that each refused cause passes
with its declaration alone, that every row ran, and that a vLLM row without a vLLM
interpreter is reported as not run, never as sound. torch is imported only in children.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from provenance.selftest.user_rows import VLLM_PROGRAMS, rows

CACHE = Path(os.environ.get("PROV_TEST_CACHE", Path.home() / ".cache" / "prov-tests"))
PROV = [sys.executable, "-c", "from provenance.cli import main; main()"]
CPU_ROWS = [r.name for r in rows() if r.program not in VLLM_PROGRAMS]
VLLM_ROWS = [r.name for r in rows() if r.program in VLLM_PROGRAMS]
# rows whose change moves the output of these programs on any machine
MOVES = {"hf-weights", "hf-generation-config", "hf-tokenizer", "hf-chat-template",
         "hf-prompt", "hf-getenv", "hf-temp-arg", "st-weights", "np-array", "np-prompt",
         "hashseed-reexec"}
# the key each cause row must be refused on
NAMED = {
    "hf-weights": 'model.files."model.safetensors".sha256',
    "hf-generation-config": 'model.files."generation_config.json".sha256',
    "hf-tokenizer": 'model.files."tokenizer.json".sha256',
    "hf-chat-template": 'model.files."chat_template.jinja".sha256',
    "hf-prompt": 'inputs.files."prompt.txt".sha256',
    "hf-getenv": "env.MY_TEMPERATURE",
    "hf-temp-arg": "code.args.temp",
    "st-weights": 'model.files."model.safetensors".sha256',
    "np-array": 'inputs.files."data/weights.npy".sha256',
    "np-prompt": 'inputs.files."prompt.txt".sha256',
    "hashseed-reexec": "runtime.process_env.PYTHONHASHSEED",
    "vllm-weights": 'model.files."model.safetensors".sha256',
    "vllm-chat-template": 'model.files."chat_template.jinja".sha256',
    "vllm-generation-config": 'model.files."generation_config.json".sha256',
}


def demo_model() -> Path:
    model = CACHE / "demo-model"
    # built in a child: the pytest process must not import torch
    subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                    "from runners.demo.build import ensure; ensure(Path(sys.argv[1]), steps=120)",
                    str(model)], check=True)
    return model


def selftest(work: Path, names: list[str], *extra: str) -> dict:
    out = work / "result.json"
    proc = subprocess.run(
        [*PROV, "selftest", "identity", "--programs", "--workdir", str(work / "runs"),
         "--model", str(demo_model()), "--only", ",".join(names), "--out", str(out),
         "--markdown", str(work / "table.md"), *extra],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert out.is_file(), proc.stdout + proc.stderr
    result = json.loads(out.read_text())
    result["_exit"] = proc.returncode
    result["_stdout"] = proc.stdout + proc.stderr
    result["_markdown"] = (work / "table.md").read_text()
    return result


@pytest.fixture(scope="module")
def cpu(tmp_path_factory) -> dict:
    # one vLLM row without a vLLM interpreter: reported as not run
    return selftest(tmp_path_factory.mktemp("programs"), [*CPU_ROWS, "vllm-repeat"])


def by_name(result: dict) -> dict[str, dict]:
    return {r["name"]: r for r in result["rows"]}


def assert_sound(result: dict, names: list[str]) -> None:
    r = by_name(result)
    bad = [(n, r[n]["verdict"], r[n]["reason"][-600:], r[n]["keys"], r[n]["vary_keys"])
           for n in names if r[n]["status"] != "ok" or r[n]["verdict"] != "sound"]
    assert not bad, result["_stdout"][-4000:]
    for name in names:
        row = r[name]
        assert len(row["run_ids"]) == 2 and row["run_ids"][0] != row["run_ids"][1], row
        if row["expect"] == "context":  # nothing that cannot matter moves the identity
            assert row["outputs_changed"] == [] and row["keys"] == [], row
            assert not row["identity_changed"], row
        else:
            assert NAMED[name] in row["keys"], row
            assert row["vary_ok"] is True and row["vary_keys"] == [], row


def test_cpu_rows_all_ran_with_no_missed_cause_and_no_noise(cpu):
    assert_sound(cpu, CPU_ROWS)
    assert cpu["counts"] == {"sound": len(CPU_ROWS), "not run": 1}
    assert cpu["_exit"] == 0


def test_the_changes_moved_the_outputs(cpu):
    r = by_name(cpu)
    for name in MOVES:
        assert r[name]["outputs_changed"] == ["output"], name


def test_each_cause_is_refused_on_its_own_keys(cpu):
    r = by_name(cpu)
    assert r["hf-weights"]["keys"] == [NAMED["hf-weights"]]
    assert r["st-weights"]["keys"] == [NAMED["st-weights"]]
    assert r["hf-getenv"]["keys"] == ["env.MY_TEMPERATURE"]
    assert r["hf-temp-arg"]["keys"] == ["code.args.temp"]
    assert r["hashseed-reexec"]["keys"] == ["runtime.process_env.PYTHONHASHSEED"]
    assert r["np-array"]["keys"] == [NAMED["np-array"]]


def test_a_vllm_row_without_an_interpreter_is_not_run_and_not_counted_sound(cpu):
    row = by_name(cpu)["vllm-repeat"]
    assert (row["status"], row["verdict"]) == ("not run", "not run")
    assert "--python" in row["reason"] and row["run_ids"] == []


def test_every_run_is_a_recorded_prov_exec_run_of_the_program(cpu):
    from provenance.store import open_store

    store = open_store(cpu["store"])
    for row in cpu["rows"]:
        for run_id in row["run_ids"]:
            rec = store.get_run(run_id).record
            assert rec.state == "complete" and rec.exit_status == 0, run_id
            assert rec.name.startswith("selftest-") and rec.outputs, rec
            code = store.run_manifest(rec).facts["code"]
            assert code["program"] == ["python", "<script>"], code["program"]
            assert any(a.endswith(row["program"]) for a in rec.command), rec.command


def test_markdown_table_has_one_line_per_row_and_the_declaration(cpu):
    lines = [x for x in cpu["_markdown"].splitlines() if x.startswith("| ")]
    assert len(lines) == 1 + len(cpu["rows"])
    assert "| declared |" in lines[0]
    weights = next(x for x in lines if x.startswith("| hf-weights:"))
    assert "passes with --vary weights" in weights


@pytest.mark.slow
def test_vllm_rows_with_the_vllm_interpreter(tmp_path):
    from tests.runners.vllm_venv import vllm_python

    result = selftest(tmp_path, VLLM_ROWS, "--python", str(vllm_python()))
    assert_sound(result, VLLM_ROWS)
    assert by_name(result)["vllm-weights"]["outputs_changed"] == ["output"]
    assert result["counts"] == {"sound": len(VLLM_ROWS)} and result["_exit"] == 0
