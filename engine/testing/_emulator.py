"""A scriptable provider emulator on top of ``LoopbackServer``.

An ``Emulator`` answers each request with the next scripted step (a ``Response``, or a function
of the ``Received`` request returning one) and falls back to ``default`` when the script is
empty. It records every request it got, body included, so tests can assert on what went over
the wire. Provider-specific emulators subclass it and add reply builders; the failure builders
here are shared::

    emu = Emulator(default=lambda req: Response.json({...}))
    emu.script(rate_limited(retry_after="1"), server_error())
    with emu.serve() as server:
        ...  # connect(..., base_url=server.url)
    assert emu.received[-1].json()["model"] == "gpt-4.1"
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from ._server import LoopbackServer, Request, Response

__all__ = ["Emulator", "Received", "rate_limited", "server_error", "slow"]

Step = Response | Callable[["Received"], Response]


class Received:
    """One request as the emulator saw it: method, path, query, headers and the whole body."""

    def __init__(self, method: str, path: str, query: dict[str, list[str]],
                 headers: dict[str, str], body: bytes) -> None:
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        """The body decoded as JSON."""
        return json.loads(self.body or b"null")

    def header(self, name: str, default: str | None = None) -> str | None:
        """A header by case-insensitive name."""
        return self.headers.get(name.lower(), default)

    def __repr__(self) -> str:
        return f"Received({self.method} {self.path}, {len(self.body)} bytes)"


class Emulator:
    """Scripted replies, request recording; serve with ``serve()`` (a ``LoopbackServer``)."""

    def __init__(self, default: Step | None = None) -> None:
        self.default = default
        self.received: list[Received] = []
        self._script: deque[Step] = deque()
        self._lock = threading.Lock()

    def script(self, *steps: Step) -> Emulator:
        """Queue ``steps``: each answers one request, in order."""
        with self._lock:
            self._script.extend(steps)
        return self

    def serve(self) -> LoopbackServer:
        """A ``LoopbackServer`` running this emulator (use it as a context manager)."""
        return LoopbackServer(self)

    def handle(self, request: Received) -> Response:
        """The default step when the script is empty; subclasses route on the path here."""
        if self.default is None:
            return Response.json({"error": {"message": "emulator: nothing scripted"}}, 500)
        return self.default if isinstance(self.default, Response) else self.default(request)

    def __call__(self, request: Request) -> Response:
        received = Received(request.method, request.path, request.query, request.headers,
                            request.read())
        with self._lock:
            self.received.append(received)
            step = self._script.popleft() if self._script else None
        if step is None:
            return self.handle(received)
        return step if isinstance(step, Response) else step(received)


def rate_limited(retry_after: str | float | None = "0", *,
                 message: str = "Rate limit reached") -> Response:
    """A 429 with ``Retry-After`` (seconds or an HTTP date) and an OpenAI-style error body."""
    headers = {} if retry_after is None else {"retry-after": str(retry_after)}
    return Response.json({"error": {"message": message, "type": "rate_limit_error"}}, 429,
                         headers=headers)


def server_error(status: int = 500, message: str = "internal error") -> Response:
    """A 5xx (or any status) with an error body and a request id header."""
    return Response.json({"error": {"message": message, "type": "server_error"}}, status,
                         headers={"x-request-id": f"req_emulated_{status}"})


def slow(response: Response, delay: float) -> Response:
    """``response`` sent after ``delay`` seconds (for timeout tests)."""
    response.delay = delay
    return response
