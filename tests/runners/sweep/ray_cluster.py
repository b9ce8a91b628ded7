"""A real two-node Ray cluster on loopback for tests and the bench.

The head gets a `head_node` resource, the second node an `odd_node` resource and one
numerics-relevant environment variable set differently (OMP_NUM_THREADS), so it stands for a
heterogeneous machine; cells are steered onto it through that resource. Ray runs from this
interpreter's venv with a private --temp-dir, all traffic on 127.0.0.1; `stop()` runs
`ray stop --force` with that temp dir's environment and removes it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ODD_ENV = {"OMP_NUM_THREADS": "2"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_bin() -> str:
    return str(Path(sys.executable).with_name("ray"))


@dataclass
class RayCluster:
    address: str
    temp_dir: Path
    env: dict[str, str]

    def stop(self) -> None:
        subprocess.run([_ray_bin(), "stop", "--force"], env=self.env, capture_output=True,
                       timeout=120)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def _base_env(temp_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "OMP_"))}
    env.update({
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_DISABLE_DOCKER_CPU_WARNING": "1",
        "OMP_NUM_THREADS": "1",
        # the ray CLI finds "its" cluster through this file; keep it private to the test
        "RAY_TMPDIR": str(temp_dir),
        "TMPDIR": str(temp_dir),
    })
    return env


def start(num_cpus: int = 1, odd_cpus: int = 1, odd_node: bool = True) -> RayCluster:
    # Ray's unix sockets live under the temp dir; keep its path short (108-byte limit)
    temp_dir = Path(tempfile.mkdtemp(prefix="prt", dir="/tmp"))
    env = _base_env(temp_dir)
    port = free_port()
    address = f"127.0.0.1:{port}"
    common = ["--node-ip-address=127.0.0.1", "--disable-usage-stats",
              "--object-store-memory=100000000", "--include-log-monitor=false"]
    cluster = RayCluster(address, temp_dir, env)
    try:
        subprocess.run(
            [_ray_bin(), "start", "--head", f"--port={port}", f"--temp-dir={temp_dir}",
             "--include-dashboard=false", f"--num-cpus={num_cpus}",
             '--resources={"head_node": 4}', *common],
            env=env, check=True, capture_output=True, timeout=180)
        if odd_node:
            subprocess.run(
                [_ray_bin(), "start", f"--address={address}", f"--num-cpus={odd_cpus}",
                 '--resources={"odd_node": 4}', *common],
                env={**env, **ODD_ENV}, check=True, capture_output=True, timeout=180)
        _wait_nodes(address, env, 2 if odd_node else 1)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _wait_nodes(address: str, env: dict[str, str], n: int, timeout: float = 120) -> None:
    probe = ("import ray,sys; ray.init(address=sys.argv[1], logging_level='ERROR'); "
             "print(sum(1 for x in ray.nodes() if x['Alive']))")
    deadline = time.time() + timeout
    while True:
        out = subprocess.run([sys.executable, "-c", probe, address], env=env,
                             capture_output=True, text=True, timeout=120)
        if out.returncode == 0 and out.stdout.strip() == str(n):
            return
        if time.time() > deadline:
            raise RuntimeError(f"ray cluster at {address}: {n} nodes not alive: "
                               f"{out.stdout} {out.stderr[-500:]}")
        time.sleep(1)
