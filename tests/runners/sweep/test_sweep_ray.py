"""`prov sweep --ray` on a real two-node Ray cluster on loopback (one cluster per module).

The second node has OMP_NUM_THREADS=2 where the head has 1 (a numerics-relevant variable
that the env collector records as identity): cells steered onto it through its custom
resource must be flagged by the gate, the others compared. Then a Ray worker is killed
mid-cell: the cell is retried and completes, no run is lost or duplicated, fsck is clean.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.runners.sweep import ray_cluster

PROV = str(Path(sys.executable).with_name("prov"))


@pytest.fixture(scope="module")
def cluster():
    c = ray_cluster.start(num_cpus=1, odd_cpus=1)
    try:
        yield c
    finally:
        c.stop()


def _spec(tmp: Path, model: Path, *, axes: str, reference: str, rules: str = "",
          max_tokens: int = 96, repeats: int = 1) -> Path:
    spec = tmp / "spec.toml"
    spec.write_text(f"""
[sweep]
name = "ray-test"
engine = "transformers"
model = "{model}"
text = "{model / 'eval.txt'}"
max_tokens = {max_tokens}
block = 32
repeats = {repeats}
retries = 2

[axes]
{axes}

[reference]
{reference}

[resources]
num_cpus = 1
resources = {{ head_node = 1 }}
{rules}
""")
    return spec


def _env(tmp: Path, cluster) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update({"PROV_STORE": str(tmp / "store"), "RAY_USAGE_STATS_ENABLED": "0",
                "RAY_TMPDIR": str(cluster.temp_dir), "PROV_NO_PYPROJECT": "1"})
    return env


def _store(tmp: Path):
    from provenance.store import open_store

    return open_store(tmp / "store")


def _fsck(tmp: Path, env) -> dict:
    out = subprocess.run([PROV, "store", "fsck", "--json"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def test_heterogeneous_node_is_flagged(cluster, demo_model, tmp_path):
    spec = _spec(tmp_path, demo_model,
                 axes='attn = ["eager", "sdpa"]\ndtype = ["float32", "bfloat16"]',
                 reference='attn = "eager"\ndtype = "float32"',
                 rules='[[resources.when]]\nmatch = { dtype = "bfloat16" }\n'
                       'resources = { odd_node = 1 }')
    env = _env(tmp_path, cluster)
    out = subprocess.run([PROV, "sweep", str(spec), "--ray", cluster.address, "--json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)
    assert out.returncode == 3, out.stderr[-3000:]  # 3: the gate flagged cells
    rec = json.loads(out.stdout)
    cells = {c["label"]: c for c in rec["cells"]}
    assert len(cells) == 4 and all(c["state"] == "complete" for c in cells.values())
    store = _store(tmp_path)
    for c in cells.values():  # every cell's runs came home, complete, with their objects
        assert len(c["runs"]) == 1
        assert store.get_run(c["runs"][0]).state == "complete"
        assert c["node"]["executor"] == "ray" and c["node"]["node_ip"]
    odd = {cells[k]["node"]["node_id"] for k in cells if k.endswith("bfloat16")}
    head = {cells[k]["node"]["node_id"] for k in cells if k.endswith("float32")}
    assert len(odd) == 1 and len(head) == 1 and odd != head
    for label in ("attn=eager,dtype=bfloat16", "attn=sdpa,dtype=bfloat16"):
        gate = cells[label]["gate"]
        assert gate["gate"] == "flagged", gate
        assert gate["differing"]["env.OMP_NUM_THREADS"] == {"reference": "1", "cell": "2"}
        assert "summary" not in cells[label]  # kept out of the comparison
    sdpa = cells["attn=sdpa,dtype=float32"]
    assert sdpa["gate"]["gate"] == "passed", sdpa["gate"]
    assert any(k.startswith("runtime.transformers.models.0.attn_implementation")
               for k in sdpa["gate"]["varied_keys"])
    assert sdpa["summary"]["top1_agreement"] == 1.0
    assert sdpa["summary"]["kl_ref_cand_mean"] < 1e-9
    assert cells["attn=eager,dtype=float32"]["gate"] == {"gate": "reference"}
    # identical objects (the head's snapshot manifest, ...) were shipped twice, stored once
    assert sum(c["shipped"]["deduplicated"] for c in cells.values()) > 0
    doc = store.get_json(rec["record"])
    assert doc["kind"] == "prov.sweep" and doc["spec_digest"] == rec["spec_digest"]
    fsck = _fsck(tmp_path, env)
    assert fsck["ok"] and fsck["runs"] == {"complete": 4}


def _worker_of(cell_dir_part: str, temp_dir: Path) -> tuple[int, int] | None:
    """(pid of a runners.worker whose --out names a sweep cell under this cluster's temp dir,
    pid of its parent): never another test run's worker on a shared machine."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
            stat = (d / "stat").read_text()
        except OSError:
            continue
        if b"runners.worker" in argv and any(cell_dir_part.encode() in a
                                               and a.startswith(bytes(temp_dir)) for a in argv):
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            return int(d.name), ppid
    return None


def test_killed_worker_cell_is_retried(cluster, demo_model, tmp_path):
    spec = _spec(tmp_path, demo_model, axes='attn = ["eager", "sdpa"]',
                 reference='attn = "eager"', max_tokens=80, repeats=2)
    env = _env(tmp_path, cluster)
    proc = subprocess.Popen([PROV, "sweep", str(spec), "--ray", cluster.address, "--json"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 240
        found = None
        while found is None and time.time() < deadline and proc.poll() is None:
            found = _worker_of("/sweep-", cluster.temp_dir)
            time.sleep(0.2)
        assert found, "no sweep worker process appeared"
        worker, ray_worker = found
        cell_arg = next(a for a in Path(f"/proc/{worker}/cmdline").read_bytes().split(b"\0")
                        if b"/sweep-" in a).decode()
        killed_cell = cell_arg.split("/sweep-")[1].split("-r")[0]
        os.kill(ray_worker, signal.SIGKILL)  # the Ray worker running the cell dies
        stdout, stderr = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr[-3000:]
    rec = json.loads(stdout)
    cells = {c["key"].split(":")[1][:12]: c for c in rec["cells"]}
    hit = cells[killed_cell]
    assert hit["state"] == "complete" and hit["attempts"] == 2, hit
    assert "Worker" in hit["failures"][0] or "died" in hit["failures"][0], hit["failures"]
    store = _store(tmp_path)
    runs = store.list_runs()
    # the killed attempt's run lived in the node's private store: never shipped, so the
    # driver's store holds exactly the finished cells' runs, none lost, none twice
    assert sorted(r.run_id for r in runs) == sorted(r for c in cells.values() for r in c["runs"])
    assert len(runs) == 4 and all(r.state == "complete" for r in runs)
    assert all(c["verdict"]["verdict"] == "bit-identical" for c in cells.values())
    assert _fsck(tmp_path, env)["ok"]
