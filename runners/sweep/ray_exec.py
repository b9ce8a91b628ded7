"""The Ray executor: each cell a Ray task with its resources, on whichever node has them.

`ray` is imported here only, and this module only when `--ray` is given. The task runs the
cell into a private store on its node and returns the cell's objects; the driver merges them.
Retries are the driver's, not Ray's, so every attempt and why it failed is recorded: a task
whose worker process or node died (WorkerCrashedError, NodeDiedError, ...) is submitted
again with the same resources, so it lands on any node that has them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

Event = Callable[[str, str, dict[str, Any]], None]


def _cell_task(p: dict[str, Any]) -> dict[str, Any]:
    """Runs on the node (module-level so Ray pickles it by reference)."""
    import ray

    from runners.sweep.cell import run_cell

    ctx = ray.get_runtime_context()
    node = {"executor": "ray", "node_id": ctx.get_node_id()}
    return run_cell(p, None, node)


class RayExecutor:
    name = "ray"

    def __init__(self, address: str) -> None:
        try:
            import ray
        except ImportError:
            from runners.sweep.spec import SpecError

            raise SpecError("--ray needs the `ray` package (pip install 'ray[default]')") from None
        self.ray = ray
        self.address = address
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False,
                 configure_logging=False)

    def _submit(self, p: dict[str, Any], res: dict[str, Any]):
        task = self.ray.remote(_cell_task).options(
            num_cpus=res["num_cpus"], num_gpus=res["num_gpus"],
            resources=res["resources"] or None, max_retries=0, name=f"prov-cell-{p['label']}")
        return task.remote(p)

    def run(self, payloads: list[dict[str, Any]], retries: int, on_event: Event,
            resources: dict[str, dict[str, Any]]) -> Iterator[tuple[dict[str, Any], dict]]:
        ray = self.ray
        from runners.sweep.cell import CellError

        pending: dict[Any, tuple[dict[str, Any], int, list[str]]] = {}
        for p in payloads:
            pending[self._submit(p, resources[p["cell_id"]])] = (p, 1, [])
            on_event(p["cell_id"], "submitted", {"attempt": 1})
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
                for ref in ready:
                    p, attempt, failures = pending.pop(ref)
                    try:
                        out = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:
                        cause = exc.as_instanceof_cause()
                        msg = f"attempt {attempt}: {type(cause).__name__}: {cause}"[:600]
                        if isinstance(cause, CellError) or attempt > retries:
                            yield p, {"error": msg, "failures": [*failures, msg],
                                      "attempts": attempt}
                            continue
                        failures = [*failures, msg]
                    except ray.exceptions.RayError as exc:  # worker or node died
                        msg = f"attempt {attempt}: {type(exc).__name__}: {str(exc)[:300]}"
                        failures = [*failures, msg]
                        if attempt > retries:
                            yield p, {"error": msg, "failures": failures, "attempts": attempt}
                            continue
                    else:
                        # the address the node joined the cluster with (not a guess from
                        # the default route)
                        addr = self._node_ips().get(out["node"].get("node_id"))
                        if addr:
                            out["node"]["node_ip"] = addr
                        yield p, {**out, "attempts": attempt, "failures": failures}
                        continue
                    on_event(p["cell_id"], "retrying", {"attempt": attempt + 1,
                                                        "error": failures[-1]})
                    pending[self._submit(p, resources[p["cell_id"]])] = \
                        (p, attempt + 1, failures)
        finally:
            for ref in pending:  # ^C or an error: nothing left running on the cluster
                with contextlib.suppress(Exception):  # best effort on the way out
                    ray.cancel(ref, force=True)

    def _node_ips(self) -> dict[str, str]:
        try:
            return {n["NodeID"]: n["NodeManagerAddress"] for n in self.ray.nodes()}
        except Exception:  # noqa: BLE001 - the address is a courtesy
            return {}

    def close(self) -> None:
        self.ray.shutdown()
