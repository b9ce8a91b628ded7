"""Who is on the other end (_prov_probe/peer.py): /proc/net/tcp rows decoded, and a real
loopback connection traced to this very process and its prov run."""

from __future__ import annotations

import os
import socket

from provenance.exec.probe.inproc._prov_probe.peer import (
    decode_address,
    peer,
    run_of,
    socket_inode,
)

TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 4242 1 0
   1: 0100007F:C350 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0
"""


def test_rows_decode_to_address_and_port():
    assert decode_address("0100007F:1F90") == (bytes([127, 0, 0, 1]), 8080)
    # IPv6 ::ffff:127.0.0.1, as /proc/net/tcp6 writes it
    assert decode_address("0000000000000000FFFF00000100007F:1F90") == (
        bytes([127, 0, 0, 1]), 8080)
    lo = bytes([127, 0, 0, 1])
    assert socket_inode(TCP, (lo, 50000), (lo, 8080)) == 4343
    assert socket_inode(TCP, (lo, 50001), (lo, 8080)) is None


def test_a_loopback_connection_is_traced_to_its_process_and_run(monkeypatch):
    monkeypatch.setenv("PROV_RUN_ID", "")  # not ours: read from /proc/<pid>/environ
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        client = socket.create_connection(server.getsockname())
        accepted, addr = server.accept()
        try:
            found = peer(addr, server.getsockname())
        finally:
            accepted.close()
            client.close()
    # the client socket is this process's: peer() skips its own pid, so a socket held by
    # the calling process is no peer; another process's would be found
    assert found == {"host": "127.0.0.1", "port": addr[1]}


def test_a_client_in_another_process_is_found_with_its_run(tmp_path):
    import subprocess
    import sys

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        code = (f"import socket, sys; s = socket.create_connection(('127.0.0.1', {port})); "
                "sys.stdin.read()")
        env = {**os.environ, "PROV_RUN_ID": "feedface", "PROV_RUN_DIR": str(tmp_path)}
        child = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.PIPE)
        try:
            accepted, addr = server.accept()
            found = peer(addr, server.getsockname())
            accepted.close()
        finally:
            child.stdin.close()
            child.wait(timeout=30)
    assert found["pid"] == child.pid
    assert found["run_id"] == "feedface" and found["run_dir"] == str(tmp_path)
    assert run_of(os.getpid()).get("run_id") != "feedface"


def test_sock_diag_and_the_tcp_table_find_the_same_socket():
    from provenance.exec.probe.inproc._prov_probe.peer import _addr_bytes, diag_inode

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        client = socket.create_connection(server.getsockname())
        accepted, addr = server.accept()
        try:
            lo = _addr_bytes("127.0.0.1")
            local, remote = (lo, addr[1]), (lo, server.getsockname()[1])
            with open("/proc/net/tcp") as fh:
                from_table = socket_inode(fh.read(), local, remote)
            assert diag_inode(local, remote) == from_table == os.fstat(client.fileno()).st_ino
        finally:
            accepted.close()
            client.close()
