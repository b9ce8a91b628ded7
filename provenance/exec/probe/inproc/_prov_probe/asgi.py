"""Every HTTP exchange of a Starlette application (FastAPI, vLLM's and SGLang's OpenAI
servers, a user's), recorded by the server's own process; and prov's identity route.

Installed when `starlette.applications` is imported: `Starlette.__call__` (FastAPI calls it
through `super()`) is wrapped so each HTTP request's body and response pass through
counters on their way (nothing is changed, delayed or buffered for the program); at the end
a line (exchange.py) goes to `$PROV_RUN_DIR/exchanges/<pid>.jsonl` and, when the client
is a prov run on this machine (peer.py), to `<client run dir>/server/<server run id>.jsonl`.
The peer is looked up on worker threads as the request comes in, and the response starts
once it is found (while the client's socket surely exists); the line is written on one
worker thread, so the event loop only hashes bytes; the last chunk of a response goes out
once its line is written (at most 5 s), so a client that ends at once finds its exchange
when its prov binds it. Headers are never
kept but the content type; the query string neither.
`GET /prov/v1/identity` answers with this server run's id, store, live manifest digest and
manifest (for a client on another machine); every other path is the application's.
A failure anywhere here becomes an entry of the probe's errors; the response goes on.
"""

import os
import time

from . import exchange as fmt
from .jsonout import dumps

IDENTITY_PATH = "/prov/v1/identity"
IDENTITY_FORMAT = "prov-identity/1"
MARK = "prov.exchange"  # in the scope: an application mounted inside another is seen once
PEER_CACHE = 4096
PEER_WAIT_S = 10.0  # the longest a response's start waits for its client's lookup
LOOKUP_THREADS = 4


def install(probe, module):
    cls = getattr(module, "Starlette", None)
    if cls is None or getattr(cls, "_prov_recorded", False):
        return
    recorder = Recorder(probe)
    original = cls.__call__

    async def __call__(self, scope, receive, send):
        if not isinstance(scope, dict) or scope.get("type") != "http" or MARK in scope:
            return await original(self, scope, receive, send)
        return await recorder.handle(original, self, scope, receive, send)

    __call__.__doc__ = original.__doc__
    cls.__call__ = __call__
    cls._prov_recorded = True
    probe.asgi = recorder


def _header(scope_or_headers, name):
    for k, v in scope_or_headers or ():
        if bytes(k).lower() == name:
            return bytes(v).decode("latin-1")[:200]
    return None


class Body:
    """A body seen chunk by chunk: its sha256 and size, and its first KEEP_LIMIT bytes."""

    def __init__(self, sha256):
        self.hash = sha256()
        self.size = 0
        self.kept = bytearray()
        self.truncated = False

    def add(self, chunk):
        if not chunk:
            return
        chunk = bytes(chunk)
        self.hash.update(chunk)
        self.size += len(chunk)
        room = fmt.KEEP_LIMIT - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]
        if len(chunk) > room:
            self.truncated = True

    def summary(self):
        out = {"sha256": self.hash.hexdigest(), "size": self.size}
        if self.truncated:
            out["parsed_first_bytes"] = fmt.KEEP_LIMIT
        return out


class Exchange:
    def __init__(self, scope, sha256):
        self.method = str(scope.get("method", ""))
        self.path = str(scope.get("path", ""))[:1000]
        self.client = tuple(scope.get("client") or ())
        self.server = tuple(scope.get("server") or ())
        self.request_type = _header(scope.get("headers"), b"content-type")
        self.started = time.time()
        self.request = Body(sha256)
        self.response = Body(sha256)
        self.status = None
        self.response_type = None
        self.error = None
        self.peer = None  # a future: the client's process and run

    def on_receive(self, message):
        if message.get("type") == "http.request":
            self.request.add(message.get("body"))

    def on_send(self, message):
        kind = message.get("type")
        if kind == "http.response.start":
            self.status = message.get("status")
            self.response_type = _header(message.get("headers"), b"content-type")
        elif kind == "http.response.body":
            self.response.add(message.get("body"))


class Recorder:
    def __init__(self, probe):
        import hashlib  # the server's own: Starlette's responses import it

        self.probe = probe
        self.sha256 = hashlib.sha256
        self.pool = None
        self.lookups = None
        self.peers = {}
        self.seq = 0
        self.server = None
        if hasattr(os, "register_at_fork"):  # a forked worker (uvicorn --workers): its own
            os.register_at_fork(after_in_child=self._forked)  # thread, pid and file

    def _forked(self):
        self.pool, self.lookups, self.peers, self.seq, self.server = None, None, {}, 0, None

    # -- on the event loop: cheap, guarded -------------------------------------------
    async def handle(self, original, app, scope, receive, send):
        ex = self.probe.guarded("asgi start", self._start, scope)
        if ex is None:
            return await original(app, scope, receive, send)
        if ex.method == "GET" and ex.path == IDENTITY_PATH:
            return await self._identity(send)
        guarded = self.probe.guarded

        async def receive_seen():
            message = await receive()
            guarded("asgi receive", ex.on_receive, message)
            return message

        async def send_seen(message):
            guarded("asgi send", ex.on_send, message)
            if message.get("type") == "http.response.start" and ex.peer is not None \
                    and not ex.peer.done():
                # before the client has a byte of its answer, so its socket surely still
                # exists: a client that has its whole body (by Content-Length, before the
                # last message) closes at once (a lookup scans /proc: slow on a loaded
                # host, so it is given up to PEER_WAIT_S)
                await _settle(ex.peer, timeout=PEER_WAIT_S)
            if _last_body(message):
                # the line is written before the client has its whole answer: a client
                # that ends at once (curl) finds it when its prov binds the run
                written = guarded("asgi end", self._end, ex)
                if written is not None:
                    await _settle(written, timeout=5.0)
            await send(message)

        try:
            await original(app, scope, receive_seen, send_seen)
        except BaseException as exc:
            ex.error = type(exc).__name__
            raise
        finally:
            if getattr(ex, "ended", None) is None:  # no last body went out (an error)
                guarded("asgi end", self._end, ex)

    def _start(self, scope):
        scope[MARK] = True
        ex = Exchange(scope, self.sha256)
        if len(ex.client) == 2 and len(ex.server) == 2:
            ex.peer = self._submit("lookups", self._peer, ex.client, ex.server)
        return ex

    def _end(self, ex):
        ex.ended = time.time()
        return self._submit("pool", self._write, ex)

    def _submit(self, which, fn, *args):
        """Lookups run on their own threads (one slow lookup, of a client that went away,
        must not hold the next client's up until its client has gone too); lines are
        written by one thread, in order."""
        if getattr(self, which) is None:
            from concurrent.futures import ThreadPoolExecutor  # asyncio's own import

            setattr(self, which, ThreadPoolExecutor(
                LOOKUP_THREADS if which == "lookups" else 1,
                thread_name_prefix="prov-" + which))
        return getattr(self, which).submit(self.probe.guarded, "asgi " + fn.__name__, fn,
                                           *args)

    async def _identity(self, send):
        doc = self.probe.guarded("asgi identity", self.identity) or {"format": IDENTITY_FORMAT}
        body = dumps(doc).encode("utf-8")
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    # -- on the worker thread --------------------------------------------------------
    def server_run(self):
        if self.server is None:
            env = os.environ
            self.server = {"run_id": env.get("PROV_RUN_ID"), "store": env.get("PROV_STORE"),
                           "run_dir": env.get("PROV_RUN_DIR"), "pid": os.getpid()}
        return self.server

    def identity(self):
        """This server run as its store holds it now: id, store, state, the live manifest
        digest and the manifest document (for a client on another machine, whose prov
        takes its identity keys by its own table). Read only when asked: the store's
        index is SQLite, whose module a server may not have loaded otherwise."""
        run = self.server_run()
        doc = {"format": IDENTITY_FORMAT, "server_run_id": run["run_id"],
               "store": run["store"], "pid": run["pid"], "manifest_digest": None}
        found = self.probe.guarded("asgi identity store", _live_record, run["store"],
                                   run["run_id"])
        if found:
            record, manifest = found
            doc["manifest_digest"] = record.get("manifest_digest")
            doc["state"] = record.get("state")
            if isinstance(record.get("live"), dict):
                doc["live"] = record["live"]
            doc["manifest"] = manifest
        return doc

    def _peer(self, client, server):
        key = (client, server)
        if key not in self.peers:
            if len(self.peers) >= PEER_CACHE:
                self.peers.clear()
            from .peer import peer

            self.peers[key] = peer(client, server)
        return self.peers[key]

    def _write(self, ex):
        run = self.server_run()
        # the manifest digest at this time is the store's (prov's), filled in by the client's
        # prov from the server run's record chain (exec/serving/bind.py)
        server = {"run_id": run["run_id"], "store": run["store"], "pid": run["pid"],
                  "manifest_digest": None}
        client = {}
        if ex.peer is not None:
            client = dict(self.probe.guarded("asgi peer", ex.peer.result, 30) or {})
        self.seq += 1
        request = ex.request.summary()
        request.update(self.probe.guarded("asgi request", fmt.request_fields,
                                          bytes(ex.request.kept), ex.request_type) or {})
        response = ex.response.summary()
        response.update(self.probe.guarded("asgi response", fmt.response_facts,
                                           bytes(ex.response.kept), ex.response_type,
                                           self.sha256) or {})
        exchange = {"seq": self.seq, "method": ex.method, "path": ex.path,
                    "status": ex.status, "content_type": ex.response_type,
                    "request_content_type": ex.request_type,
                    "started_at": ex.started, "ended_at": ex.ended}
        if len(ex.server) == 2:
            exchange["server_address"] = "%s:%s" % ex.server
        if ex.error:
            exchange["error"] = ex.error
        run_dir = client.pop("run_dir", None)
        data = (dumps(fmt.line(server, client, exchange, request, response, time.time()))
                + "\n").encode("utf-8", "surrogatepass")
        own = run.get("run_dir")
        if own:
            _append(os.path.join(own, "exchanges"), "%d.jsonl" % os.getpid(), data)
        if run_dir and client.get("run_id") and client.get("run_id") != server["run_id"]:
            _append(os.path.join(run_dir, "server"), "%s.jsonl" % server["run_id"], data)

    def drain(self, timeout=5.0):
        """At exit: the lines not written yet are written (or given up after `timeout`)."""
        if self.pool is not None:
            try:
                self.pool.submit(int).result(timeout=timeout)
            except Exception:
                pass


def _object(store, digest):
    import json

    hexpart = str(digest).split(":", 1)[-1]
    with open(os.path.join(store, "objects", "sha256", hexpart[:2], hexpart[2:]), "rb") as fh:
        return json.loads(fh.read())


def _live_record(store, run_id):
    """(newest record, its manifest document) of a run, read from the store's files."""
    if not store or not run_id:
        return None
    import sqlite3

    conn = sqlite3.connect(os.path.join(store, "index.sqlite"), timeout=5)
    try:
        row = conn.execute("SELECT record FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    finally:
        conn.close()
    if row is None:
        return None
    record = _object(store, row[0])
    manifest = record.get("run_manifest") or record.get("manifest")
    return record, (_object(store, manifest) if manifest else None)


def _last_body(message):
    return message.get("type") == "http.response.body" and not message.get("more_body")


async def _settle(future, timeout=2.0):
    """Wait (without blocking the loop) for the peer lookup; never raises."""
    try:
        import asyncio  # the server's own: Starlette runs on it (or anyio over it)

        await asyncio.wait({asyncio.wrap_future(future)}, timeout=timeout)  # never cancels it
    except BaseException as exc:  # a cancelled request is the application's to handle
        if type(exc).__name__ == "CancelledError":
            raise


def _append(directory, name, data):
    """One line, one write, appended (lines of concurrent writers never interleave)."""
    if not os.path.isdir(directory):
        os.makedirs(directory, exist_ok=True)
    fd = os.open(os.path.join(directory, name),
                 os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)

