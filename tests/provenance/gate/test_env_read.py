"""A variable only one run read (gate/env_read.py): listed, not refused, when both runs'
environments held it with one value; under a client's `server.*` by the servers' digests."""

from __future__ import annotations

from provenance.gate import gate
from provenance.model import Manifest


def server_client(backend: str, env: dict, digests: dict | None) -> Manifest:
    server: dict = {"code": {"args": {"attention_backend": backend}}, "env": env}
    if digests is not None:
        server["command_env"] = digests
    return Manifest({"server": server})


def test_a_server_variable_one_backend_read_follows_when_both_servers_held_it():
    a = server_client("FLASH_ATTN", {}, {"CC": "hmac:01"})
    b = server_client("TRITON_ATTN", {"CC": "/usr/bin/gcc"}, {"CC": "hmac:01"})
    result = gate(a, b, ["server.code.args.attention_backend"])
    assert result.ok and [c.key for c in result.env_one_run] == ["server.env.CC"]
    assert list(result.to_json()["read_by_one_run"]) == ["server.env.CC"]


def test_another_value_no_value_or_no_digests_refuse():
    b = server_client("TRITON_ATTN", {"CC": "/usr/bin/gcc"}, {"CC": "hmac:01"})
    for digests in ({"CC": "hmac:02"}, {}, None):
        a = server_client("FLASH_ATTN", {}, digests)
        result = gate(a, b, ["server.code.args.attention_backend"])
        assert [c.key for c in result.refused] == ["server.env.CC"], digests
    # a value both read and that differs is a difference, whatever the digests say
    a = server_client("FLASH_ATTN", {"CC": "clang"}, {"CC": "hmac:01"})
    assert [c.key for c in gate(a, b, ["server.code.args"]).refused] == ["server.env.CC"]
