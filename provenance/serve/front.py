"""The recording front: `python -m provenance.serve.front --upstream URL --host H --port P`,
run by `prov serve` under the supervisor (never by hand: it needs the in-process probe).

A loopback HTTP/1.1 front for a server prov cannot probe (llama.cpp's server, SGLang, an
engine in a container, a remote endpoint). Every request is passed on to the upstream as it
came (hop-by-hop headers dropped) and its response passed back as it arrives, streamed
events included. The exchange goes through the probe's one recorder (`_prov_probe.asgi`),
the same that records a Starlette server from inside: so a client run on this machine is
bound to this front's run with no option, and `GET /prov/v1/identity` answers here too.
Before it serves, the front reads the upstream's self-description (describe.py) into the
probe's record of this process: the front run's facts, live while it serves.

One request per connection (the response says `Connection: close`): clients reconnect.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import ssl
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

HEAD_LIMIT = 64 * 1024
CHUNK = 64 * 1024
HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"te", b"trailer",
              b"upgrade", b"proxy-connection", b"proxy-authorization", b"content-length",
              b"host"}
Send = Callable[[dict[str, Any]], Awaitable[None]]


class BadRequest(Exception):
    """A request the front cannot parse: answered 400, never passed on."""


def parse_head(head: bytes) -> tuple[str, str, list[tuple[bytes, bytes]]]:
    """(first line's first word, second word, headers) of an HTTP/1.x message head."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2:
        raise BadRequest(f"bad start line {lines[0][:80]!r}")
    headers = []
    for raw in lines[1:]:
        if not raw:
            continue
        name, sep, value = raw.partition(b":")
        if not sep:
            raise BadRequest(f"bad header line {raw[:80]!r}")
        headers.append((name.strip().lower(), value.strip()))
    return parts[0].decode("latin-1"), parts[1].decode("latin-1"), headers


def header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    return next((v for k, v in headers if k == name), None)


async def read_head(reader: asyncio.StreamReader) -> bytes:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError as exc:
        raise BadRequest("message head over 64 KiB") from exc
    return head[:-4]


async def body_chunks(reader: asyncio.StreamReader,
                      headers: list[tuple[bytes, bytes]], until_eof: bool) -> AsyncIterator[bytes]:
    """A message body as it arrives: de-chunked, by Content-Length, or up to EOF."""
    if (header(headers, b"transfer-encoding") or b"").lower().endswith(b"chunked"):
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await _skip_trailer(reader)
                return
            yield await reader.readexactly(size)
            await reader.readexactly(2)
    length = header(headers, b"content-length")
    if length is not None:
        left = int(length)
        while left > 0:
            chunk = await reader.read(min(CHUNK, left))
            if not chunk:
                raise BadRequest("body shorter than its Content-Length")
            left -= len(chunk)
            yield chunk
    elif until_eof:
        while chunk := await reader.read(CHUNK):
            yield chunk


async def _skip_trailer(reader: asyncio.StreamReader) -> None:
    while (await reader.readuntil(b"\r\n")) != b"\r\n":
        pass


class Upstream:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SystemExit(f"prov serve: --upstream must be an http(s) URL, got {url!r}")
        self.scheme, self.host = parts.scheme, parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.base = parts.path  # a path prefix the upstream is served under

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        tls = ssl.create_default_context() if self.scheme == "https" else None
        return await asyncio.open_connection(self.host, self.port, ssl=tls, limit=HEAD_LIMIT)


async def forward(upstream: Upstream, scope: dict[str, Any], receive, send: Send) -> None:
    """The ASGI application the recorder wraps: the request to the upstream, its response
    back, chunk by chunk."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    target = upstream.base + scope["path"] + (
        "?" + scope["query_string"].decode("latin-1") if scope["query_string"] else "")
    head = [f"{scope['method']} {target} HTTP/1.1".encode("latin-1"),
            f"Host: {upstream.host}:{upstream.port}".encode("latin-1")]
    head += [k + b": " + v for k, v in scope["headers"] if k not in HOP_BY_HOP]
    head += [b"Content-Length: " + str(len(body)).encode(), b"Connection: close"]
    try:
        reader, writer = await upstream.open()
    except OSError as exc:
        await _answer(send, 502, f"prov serve: upstream unreachable: {exc}")
        return
    try:
        writer.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
        await writer.drain()
        _, status, headers = parse_head(await read_head(reader))
        kept = [(k, v) for k, v in headers if k not in HOP_BY_HOP]
        length = header(headers, b"content-length")
        if length is not None:
            kept.append((b"content-length", length))
        await send({"type": "http.response.start", "status": int(status), "headers": kept})
        async for chunk in body_chunks(reader, headers, until_eof=True):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        writer.close()


async def _answer(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class ClientSide:
    """The ASGI `send` of one client connection: the response head, then its body as it
    comes (close-delimited unless the upstream gave a length)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    async def __call__(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            lines = [f"HTTP/1.1 {message['status']} -".encode()]
            lines += [k + b": " + v for k, v in message.get("headers", [])]
            self.writer.write(b"\r\n".join([*lines, b"Connection: close"]) + b"\r\n\r\n")
        elif message["type"] == "http.response.body":
            self.writer.write(message.get("body", b""))
        await self.writer.drain()


async def serve_connection(app: Callable[..., Awaitable[None]], reader: asyncio.StreamReader,
                           writer: asyncio.StreamWriter) -> None:
    send = ClientSide(writer)
    try:
        method, target, headers = parse_head(await read_head(reader))
        body = b"".join([c async for c in body_chunks(reader, headers, until_eof=False)])
        path, _, query = target.partition("?")
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": method, "path": path, "raw_path": path.encode("latin-1"),
                 "query_string": query.encode("latin-1"), "headers": headers,
                 "client": writer.get_extra_info("peername")[:2],
                 "server": writer.get_extra_info("sockname")[:2]}
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:  # the request was read whole; asking again waits for a disconnect
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await app(scope, receive, send)
    except (BadRequest, ValueError) as exc:
        await _answer(send, 400, f"prov serve: bad request: {exc}")
    except (asyncio.IncompleteReadError, ConnectionError):
        pass  # the client went away
    finally:
        writer.close()


def recorded_app(upstream: Upstream) -> Callable[..., Awaitable[None]]:
    """The forwarding application behind the probe's recorder (one per process)."""
    import _prov_probe  # the probe of this process, loaded by prov exec's sitecustomize
    from _prov_probe.asgi import Recorder

    probe = _prov_probe._probe
    if probe is None:
        raise SystemExit("prov serve: the in-process probe is off (PROV_INPROCESS=0): "
                         "nothing could be recorded")
    recorder = Recorder(probe)
    probe.asgi = recorder  # drained at exit with the probe's other writers

    async def original(_app: Any, scope, receive, send) -> None:
        await forward(upstream, scope, receive, send)

    async def app(scope, receive, send) -> None:
        await recorder.handle(original, None, scope, receive, send)

    return app


async def main_async(upstream: Upstream, host: str, port: int) -> None:
    app = recorded_app(upstream)
    server = await asyncio.start_server(lambda r, w: serve_connection(app, r, w), host, port,
                                        limit=HEAD_LIMIT)
    bound = server.sockets[0].getsockname()
    print(f"prov serve: recording http://{bound[0]}:{bound[1]} -> {upstream.scheme}://"
          f"{upstream.host}:{upstream.port}{upstream.base}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # forwarded by the supervisor:
        loop.add_signal_handler(sig, stop.set)  # end cleanly, so every line is written
    async with server:
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    from provenance.serve.describe import note_upstream

    ap = argparse.ArgumentParser(prog="python -m provenance.serve.front")
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    upstream = Upstream(args.upstream)
    note_upstream(args.upstream)
    try:
        asyncio.run(main_async(upstream, args.host, args.port))
    except OSError as exc:
        print(f"prov serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
