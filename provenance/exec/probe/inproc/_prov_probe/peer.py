"""Who is on the other end of a connection, on this machine: the client's process and run.

The client's socket is the one whose local address is the client's and whose remote
address is the server's, asked of the kernel by sock_diag (or found as a row of
/proc/net/tcp{,6}); its inode is found among the `socket:[N]` links
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


def _hex_words(raw):
    return "".join("%08X" % int.from_bytes(raw[i:i + 4], "little") for i in range(0, len(raw), 4))


def address_fields(addr):
    """How /proc/net/tcp{,6} write (address bytes, port): every form it may take."""
    raw, port = addr
    forms = [_hex_words(raw)]
    if len(raw) == 4:  # in tcp6, an IPv4 peer of a dual-stack socket is mapped
        forms.append(_hex_words(b"\0" * 10 + b"\xff\xff" + raw))
    return ["%s:%04X" % (f, port) for f in forms]


def socket_inode(tcp_text, local, remote):
    """The inode of the socket with that local and remote (address bytes, port), or None.
    One substring search per form (a busy host's table has thousands of rows)."""
    for lf in address_fields(local):
        for rf in address_fields(remote):
            at = tcp_text.find(" %s %s " % (lf, rf))
            if at < 0:
                continue
            end = tcp_text.find("\n", at)
            parts = tcp_text[at:end if end >= 0 else len(tcp_text)].split()
            try:
                inode = int(parts[8])
            except (IndexError, ValueError):
                continue
            if inode:
                return inode
    return None


def _read(path):
    try:
        with open(path, "r") as fh:
            return fh.read()
    except OSError:
        return ""


NETLINK_INET_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLMSG_ERROR = 2


def diag_inode(local, remote):
    """The inode of the TCP socket local -> remote ((address bytes, port) each), asked of
    the kernel by sock_diag: one exact lookup, whatever the size of the host's TCP table
    (reading /proc/net/tcp costs microseconds per row, thousands in TIME_WAIT)."""
    import struct  # the server's own (asyncio imports it)

    family = socket.AF_INET if len(local[0]) == 4 else socket.AF_INET6
    sockid = (struct.pack(">HH", local[1], remote[1]) + local[0].ljust(16, b"\0")
              + remote[0].ljust(16, b"\0") + struct.pack("=III", 0, 0xFFFFFFFF, 0xFFFFFFFF))
    req = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
    msg = struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, 1, 1, 0) + req
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_INET_DIAG) as nl:
        nl.settimeout(1.0)
        nl.send(msg)
        data = nl.recv(8192)
    if len(data) < 88 or struct.unpack_from("=H", data, 4)[0] == NLMSG_ERROR:
        return None
    inode = struct.unpack_from("=I", data, 84)[0]
    return inode or None


def find_inode(client, server, proc="/proc"):
    """The client's socket inode for a connection seen by the server as client -> server."""
    local, remote = _addr_bytes(client[0]), _addr_bytes(server[0])
    if local is None or remote is None:
        return None
    if len(local) == len(remote) and proc == "/proc" and hasattr(socket, "AF_NETLINK"):
        try:
            inode = diag_inode((local, int(client[1])), (remote, int(server[1])))
            if inode:
                return inode
        except (OSError, ValueError):
            pass  # no sock_diag here (a container without it): the table, then
    for name in ("tcp", "tcp6"):
        inode = socket_inode(_read(os.path.join(proc, "net", name)),
                             (local, int(client[1])), (remote, int(server[1])))
        if inode:
            return inode
    return None


def pid_of_inode(inode, proc="/proc", skip=()):
    """A process holding `socket:[inode]` among its open files (the newest), or None."""
    target = "socket:[%d]" % inode
    # newest first: a client is most often younger than the server it talks to
    pids = sorted((int(e) for e in os.listdir(proc) if e.isdigit()), reverse=True)
    for pid in pids:
        if pid in skip:
            continue
        entry = str(pid)
        fd_dir = os.path.join(proc, entry, "fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(os.path.join(fd_dir, fd)) == target:
                    return pid
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


def peer(client, server, proc="/proc", tries=10, pause=0.05):
    """{"host", "port", "pid", "run_id", "run_dir", "store"} of the client, as far as known.
    A local lookup that finds no process is tried again (`tries`, `pause` seconds apart: a
    fast client was seen unfound on a loaded host); the client waits for its answer."""
    import time  # the server's own (asyncio imports it)

    out = {"host": client[0], "port": client[1]}
    pid = None
    for attempt in range(tries):
        inode = find_inode(client, server, proc)
        pid = pid_of_inode(inode, proc, skip=(os.getpid(),)) if inode else None
        loopback = str(client[0]).startswith(("127.", "::1", "::ffff:127."))
        if pid is not None or (inode is None and not loopback):
            break  # found, or a client on another machine: no row to wait for
        if attempt + 1 < tries:
            time.sleep(pause)
    if pid is None:
        return out
    out["pid"] = pid
    out.update(run_of(pid, proc))
    return out
