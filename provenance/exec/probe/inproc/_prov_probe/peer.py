"""Who is on the other end of a connection, on this machine: the client's process and run.

The client's socket is the row of /proc/net/tcp{,6} whose local address is the client's
and whose remote address is the server's; its inode is found among the `socket:[N]` links
of /proc/<pid>/fd, and that process's environment names its prov run (PROV_RUN_ID,
PROV_RUN_DIR), if it is one. A connection to another machine finds no row: no peer.
"""

import os
import socket

RUN_VARS = (b"PROV_RUN_ID", b"PROV_RUN_DIR", b"PROV_STORE")


def _addr_bytes(host):
    """The address as 4 bytes (IPv4, or IPv6 mapping an IPv4 address) or 16; None if not one."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            raw = socket.inet_pton(family, host)
        except (OSError, ValueError, TypeError):
            continue
        return raw[12:] if len(raw) == 16 and raw[:12] == b"\0" * 10 + b"\xff\xff" else raw
    return None


def decode_address(field):
    """`0100007F:1F90` (or 32 hex digits for IPv6) -> (address bytes, port), as above."""
    hexaddr, _, hexport = field.partition(":")
    raw = bytes.fromhex(hexaddr)
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # host-order words
    if len(raw) == 16 and raw[:12] == b"\0" * 10 + b"\xff\xff":
        raw = raw[12:]
    return raw, int(hexport, 16)


def socket_inode(tcp_text, local, remote):
    """The inode of the socket with that local and remote (address bytes, port), or None."""
    for row in tcp_text.splitlines()[1:]:
        parts = row.split()
        if len(parts) < 10:
            continue
        try:
            if decode_address(parts[1]) == local and decode_address(parts[2]) == remote:
                inode = int(parts[9])
                if inode:
                    return inode
        except ValueError:
            continue
    return None


def _read(path):
    try:
        with open(path, "r") as fh:
            return fh.read()
    except OSError:
        return ""


def find_inode(client, server, proc="/proc"):
    """The client's socket inode for a connection seen by the server as client -> server."""
    local, remote = _addr_bytes(client[0]), _addr_bytes(server[0])
    if local is None or remote is None:
        return None
    for name in ("tcp", "tcp6"):
        inode = socket_inode(_read(os.path.join(proc, "net", name)),
                             (local, int(client[1])), (remote, int(server[1])))
        if inode:
            return inode
    return None


def pid_of_inode(inode, proc="/proc", skip=()):
    """The first process holding `socket:[inode]` among its open files, or None."""
    target = "socket:[%d]" % inode
    for entry in os.listdir(proc):
        if not entry.isdigit() or int(entry) in skip:
            continue
        fd_dir = os.path.join(proc, entry, "fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(os.path.join(fd_dir, fd)) == target:
                    return int(entry)
            except OSError:
                continue
    return None


def run_of(pid, proc="/proc"):
    """PROV_RUN_ID, PROV_RUN_DIR and PROV_STORE of a process's environment ({} if none)."""
    try:
        with open(os.path.join(proc, str(pid), "environ"), "rb") as fh:
            data = fh.read(1 << 20)
    except OSError:
        return {}
    out = {}
    for item in data.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep and name in RUN_VARS:
            out[name.decode().lower().replace("prov_", "")] = value.decode("utf-8", "replace")
    return out


def peer(client, server, proc="/proc"):
    """{"host", "port", "pid", "run_id", "run_dir", "store"} of the client, as far as known."""
    out = {"host": client[0], "port": client[1]}
    inode = find_inode(client, server, proc)
    if inode is None:
        return out
    pid = pid_of_inode(inode, proc, skip=(os.getpid(),))
    if pid is None:
        return out
    out["pid"] = pid
    out.update(run_of(pid, proc))
    return out
