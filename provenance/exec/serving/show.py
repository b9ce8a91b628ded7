"""`prov show` rows of a client run's server binding (the `server` facts, bind.py)."""

from __future__ import annotations

from typing import Any


def _listed(value: Any) -> str:
    return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def server_rows(facts: dict[str, Any]) -> list[tuple[str, str]]:
    """`server  run ID (serving) at URL: N exchange(s)`, and what identifies it."""
    server = facts.get("server")
    if not isinstance(server, dict):
        return []
    count = (server.get("exchanges") or {}).get("count", 0)
    where = f" at {_listed(server['url'])}" if server.get("url") else ""
    state = f" ({_listed(server['state'])})" if server.get("state") else ""
    rows = [("server", f"run {_listed(server.get('run_id'))}{state}{where}: "
                       f"{count} exchange(s)")]
    if server.get("manifest_digest"):
        rows.append(("", f"manifest {_listed(server['manifest_digest'])}"))
    if server.get("servers", 1) > 1:
        rows.append(("", f"{server['servers']} server runs: server.* holds every value"))
    return rows
