"""A real HTTP/1.1 server on loopback for provider emulators.

Emulators are plain synchronous handlers ``(Request) -> Response`` served by the stdlib's
threading server in a background thread, so they work the same under asyncio and trio tests and
speak real HTTP: chunked request bodies (streamed uploads), chunked responses (SSE), slow
responses, and connections cut mid-stream.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

__all__ = ["LoopbackServer", "Request", "Response"]

_CHUNK = 1 << 16


class Request:
    """One received request. The body is read lazily (``read``, ``iter_body``, ``json``)."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self._handler = handler
        split = urlsplit(handler.path)
        self.method: str = handler.command
        self.path: str = split.path
        self.query: dict[str, list[str]] = parse_qs(split.query)
        self.headers: dict[str, str] = {k.lower(): v for k, v in handler.headers.items()}
        self._consumed = False

    def header(self, name: str, default: str | None = None) -> str | None:
        """A request header by case-insensitive name."""
        return self.headers.get(name.lower(), default)

    def query_value(self, name: str, default: str | None = None) -> str | None:
        """The first value of a query parameter."""
        values = self.query.get(name)
        return values[0] if values else default

    def iter_body(self, chunk_size: int = _CHUNK) -> Iterator[bytes]:
        """Yield the body as it arrives (Content-Length or chunked transfer encoding)."""
        if self._consumed:
            return
        self._consumed = True
        rfile = self._handler.rfile
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            while True:
                size_line = rfile.readline(1024)
                if not size_line:
                    raise ConnectionError("client closed the connection mid-body")
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return
                remaining = size
                while remaining:
                    piece = rfile.read(min(remaining, chunk_size))
                    if not piece:
                        raise ConnectionError("client closed the connection mid-chunk")
                    remaining -= len(piece)
                    yield piece
                rfile.readline(16)  # CRLF after the chunk
        else:
            remaining = int(self.headers.get("content-length", "0") or 0)
            while remaining:
                piece = rfile.read(min(remaining, chunk_size))
                if not piece:
                    raise ConnectionError("client closed the connection mid-body")
                remaining -= len(piece)
                yield piece

    def read(self) -> bytes:
        """The whole body."""
        return b"".join(self.iter_body())

    def json(self) -> Any:
        """The body decoded as JSON."""
        return json.loads(self.read() or b"null")

    def drain(self) -> None:
        """Discard an unread body so the connection can be reused."""
        for _ in self.iter_body():
            pass


class Response:
    """What a handler answers.

    ``body`` may be bytes (sent with Content-Length) or an iterable of chunks (sent with chunked
    transfer encoding, each chunk flushed, ``chunk_delay`` seconds apart). ``cut_after`` closes
    the connection after that many chunks without the terminating chunk: a cut stream.
    """

    def __init__(self, status: int = 200, body: bytes | Iterable[bytes] = b"", *,
                 headers: dict[str, str] | None = None, chunk_delay: float = 0.0,
                 cut_after: int | None = None, delay: float = 0.0) -> None:
        self.status = status
        self.body = body
        self.headers = dict(headers or {})
        self.chunk_delay = chunk_delay
        self.cut_after = cut_after
        self.delay = delay

    @classmethod
    def json(cls, value: Any, status: int = 200, *,
             headers: dict[str, str] | None = None) -> Response:
        """A JSON response."""
        merged = {"content-type": "application/json"}
        merged.update(headers or {})
        return cls(status, json.dumps(value).encode(), headers=merged)

    @classmethod
    def sse(cls, events: Iterable[tuple[str | None, Any]], *, chunk_delay: float = 0.0,
            cut_after: int | None = None, headers: dict[str, str] | None = None) -> Response:
        """A ``text/event-stream`` response; each ``(event_name, data)`` becomes one event.

        ``data`` that is not a string is JSON-encoded.
        """
        def chunks() -> Iterator[bytes]:
            for name, data in events:
                text = data if isinstance(data, str) else json.dumps(data)
                head = f"event: {name}\n" if name else ""
                yield (head + "".join(f"data: {line}\n" for line in text.split("\n")) + "\n"
                       ).encode()

        merged = {"content-type": "text/event-stream", "cache-control": "no-cache"}
        merged.update(headers or {})
        return cls(200, chunks(), headers=merged, chunk_delay=chunk_delay, cut_after=cut_after)


Handler = Callable[[Request], Response]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def handle(self) -> None:
        # The client hung up (a stream closed early): nothing is left to answer.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            super().handle()

    def _dispatch(self) -> None:
        request = Request(self)
        try:
            response = self.server.app(request)
        except Exception as exc:  # noqa: BLE001 - an emulator bug must be a 500, not a hang
            response = Response.json({"error": {"message": f"emulator error: {exc!r}"}}, 500)
        request.drain()
        self.server.log.append((request.method, request.path, request.headers))
        if response.delay:
            time.sleep(response.delay)
        try:
            self._send(response)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send(self, response: Response) -> None:
        self.send_response(response.status)
        for name, value in response.headers.items():
            self.send_header(name, value)
        if isinstance(response.body, bytes | bytearray):
            self.send_header("content-length", str(len(response.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
            return
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for index, chunk in enumerate(response.body):
            if response.cut_after is not None and index >= response.cut_after:
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if response.chunk_delay and index:
                time.sleep(response.chunk_delay)
            if chunk:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _dispatch


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, app: Handler, host: str, port: int) -> None:
        self.app = app
        self.log: list[tuple[str, str, dict[str, str]]] = []
        super().__init__((host, port), _Handler)


class LoopbackServer:
    """Serve ``app`` on 127.0.0.1 in a background thread; use as a (sync) context manager.

    ``requests`` records ``(method, path, headers)`` of every request served, for assertions.
    """

    def __init__(self, app: Handler, *, host: str = "127.0.0.1", port: int = 0) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("emulators only listen on loopback")
        self._server = _Server(app, host, port)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        kwargs={"poll_interval": 0.05})

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:54321``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[tuple[str, str, dict[str, str]]]:
        """Every request served so far."""
        return self._server.log

    def start(self) -> Self:
        """Start serving; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
