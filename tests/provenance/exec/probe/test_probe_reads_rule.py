"""Which files a run read count (inputs.py's rule, a pure function over paths), how they are
named, and what the in-process half notes: reads, writes, variables, bulk copies."""

from __future__ import annotations

import os

import pytest

from provenance.exec.probe.inputs import ReadRule, counts, input_names
from provenance.exec.probe.model_files import split_model_files
from tests.provenance.exec.probe.probe_support import probe_files, run_probed

RULE = ReadRule(skip_dirs=("/venv", "/home/u/.triton", "/store/runs/r1", "/work/out"),
                written=frozenset({"/work/scratch.txt"}))


@pytest.mark.parametrize("path", [
    "/work/prompt.txt", "/work/data/w.npy", "/tmp/eval.jsonl", "/opt/models/m/config.json",
    "/var/tmp/x.bin", "/home/u/.cache/huggingface/hub/models--a--b/snapshots/c/model.safetensors",
    "/work/venvish/notes.txt", "/mnt/data/prompts.txt",
])
def test_what_counts(path):
    assert counts(path, RULE)


@pytest.mark.parametrize("path", [
    "/work/script.py", "/work/__pycache__/script.cpython-311.pyc", "/work/lib/_ext.so",
    "/work/libfoo.so.1", "/usr/share/zoneinfo/UTC", "/etc/passwd", "/proc/self/maps",
    "/dev/shm/x", "/var/lib/dpkg/status", "/venv/lib/python3.11/site-packages/x/data.json",
    "/home/u/.local/lib/python3.11/site-packages/pkg/vocab.txt",
    "/srv/pkgs/dist-packages/a/b.json", "/srv/x/foo-1.0.dist-info/METADATA",
    "/home/u/.triton/cache/k/kernel.json", "/tmp/torchinductor_u/ab/c.json",
    "/home/u/.cache/vllm/torch_compile_cache/k/r0/graph.json", "/store/runs/r1/facts.json",
    "/work/out/result.txt", "/work/out", "/work/scratch.txt",
])
def test_what_does_not_count(path):
    assert not counts(path, RULE)


def test_names_are_relative_to_the_working_directory_else_base_names_without_collisions():
    names = input_names(["/w/prompt.txt", "/w/sub/data.txt", "/elsewhere/eval.txt",
                         "/a/x/vocab.txt", "/b/x/vocab.txt", "/c/vocab.txt"], "/w")
    assert names == {"/w/prompt.txt": "prompt.txt", "/w/sub/data.txt": "sub/data.txt",
                     "/elsewhere/eval.txt": "eval.txt", "/a/x/vocab.txt": "a/x/vocab.txt",
                     "/b/x/vocab.txt": "b/x/vocab.txt", "/c/vocab.txt": "c/vocab.txt"}
    assert len(set(names.values())) == len(names)


def test_model_files_are_the_globs_or_a_loaded_directory():
    model, other = split_model_files(
        ["/m/model.safetensors", "/m/special.txt", "/d/generation_config.json",
         "/d/prompt.txt", "/ckpt/w.npy"], ["/m"])
    assert model == ["/m/model.safetensors", "/m/special.txt", "/d/generation_config.json"]
    assert other == ["/d/prompt.txt", "/ckpt/w.npy"]


PROGRAM = """
import os, subprocess, sys
open("in.txt").read()
open("out.txt", "w").write("x")
open("both.txt", "r+").read()
fd = os.open("raw.txt", os.O_RDONLY); os.close(fd)
os.getenv("WANTED_A")
os.environ.get("WANTED_B")
"WANTED_C" in os.environ
os.environ["WANTED_D"]
copied = dict(os.environ); os.environ.copy(); list(os.environ.items())
list(os.environ.values()); [k for k in os.environ]; os.environ == {}
subprocess.run([sys.executable, "-c", "pass"], check=True)
for k in os.environ:
    if k == "PICKED":
        os.environ[k]
print(type(os.environ).__name__, isinstance(os.environ, os._Environ))
"""


def test_the_probe_notes_reads_writes_and_variables_but_not_bulk_copies(tmp_path):
    for name in ("in.txt", "both.txt", "raw.txt"):
        (tmp_path / name).write_text("x")
    (tmp_path / "prog.py").write_text(PROGRAM)
    p = run_probed(tmp_path, "prog.py", WANTED_A="1", WANTED_D="4", BULK_ONLY="5",
                   PICKED="6")
    assert p.returncode == 0 and p.stdout == b"_Environ True\n", p.stderr
    main = next(d for d in probe_files(tmp_path) if d["argv"] == ["prog.py"])
    read, written = set(main["files"]["read"]), set(main["files"]["written"])
    here = str(tmp_path) + os.sep
    assert {here + n for n in ("in.txt", "both.txt", "raw.txt")} <= read
    assert here + "out.txt" not in read
    assert {here + "out.txt", here + "both.txt"} <= written
    assert not any(f.endswith(".py") for f in read)
    names = set(main["env"]["read"])
    assert {"WANTED_A", "WANTED_B", "WANTED_C", "WANTED_D", "PICKED"} <= names
    assert "BULK_ONLY" not in names and not any(n.startswith("PROV_") for n in names)
    assert main["environ"]["WANTED_A"] == "1" and "WANTED_B" not in main["environ"]
    assert main["errors"] == []


def test_the_reads_in_a_probe_file_are_validated_as_untrusted_input():
    from provenance.exec.probe.processes import parse

    p = parse({"format": "prov-probe/1", "pid": 7,
               "files": {"read": ["/a", "/b\udcff", 3, None], "written": "not a list"},
               "env": {"read": {"X": 1}}, "environ": {"A": "1", "B": 2, "C": "\udcff"}})
    assert (p.files_read, p.files_written, p.env_read, p.environ) == (["/a"], [], [],
                                                                      {"A": "1"})
    assert parse({"format": "prov-probe/1", "pid": 7, "environ": "x"}).environ is None


FORKED = """
import os
pid = os.fork()
if pid == 0:
    open("late.txt").read()  # read after the child's last save, just before os._exit
    os.getenv("CHILD_ONLY")
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_a_forked_child_keeps_its_own_reads_to_its_os_exit(tmp_path):
    (tmp_path / "late.txt").write_text("x")
    (tmp_path / "forked.py").write_text(FORKED)
    p = run_probed(tmp_path, "forked.py", CHILD_ONLY="1")
    assert p.returncode == 0, p.stderr
    docs = probe_files(tmp_path)
    child = next(d for d in docs if d.get("forked_from"))
    parent = next(d for d in docs if not d.get("forked_from"))
    assert str(tmp_path / "late.txt") in child["files"]["read"]
    assert "CHILD_ONLY" in child["env"]["read"] and child["exit"]["via"] == "os._exit"
    assert str(tmp_path / "late.txt") not in parent["files"]["read"]
    assert "CHILD_ONLY" not in parent["env"]["read"]
