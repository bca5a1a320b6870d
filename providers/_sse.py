"""Incremental Server-Sent Events parser.

Bytes arrive split anywhere (mid-line, mid-UTF-8 sequence, between CR and LF); events are
yielded as soon as their terminating blank line arrives. Follows the WHATWG event-stream rules:
``data:`` lines join with newlines, ``:`` lines are comments, one optional space after the colon
is dropped, unknown fields are ignored, ``id``/``retry`` are tracked.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncGenerator, AsyncIterable

import msgspec

__all__ = ["SSEEvent", "iter_sse"]


class SSEEvent(msgspec.Struct, frozen=True):
    """One dispatched event. ``event`` defaults to ``"message"`` as the spec says."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


async def iter_sse(chunks: AsyncIterable[bytes]) -> AsyncGenerator[SSEEvent, None]:
    """Parse an SSE byte stream into events; a trailing event without a blank line is dropped,
    as the spec requires (a cut stream must not look complete)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    buffer = ""
    data_lines: list[str] = []
    event_name = ""
    last_id: str | None = None
    retry: int | None = None
    first = True
    pending_cr = False

    async for chunk in chunks:
        text = decoder.decode(chunk)
        if first and text:
            text = text.removeprefix("\ufeff")
            first = False
        if pending_cr and text.startswith("\n"):
            text = text[1:]  # the LF of a CRLF split across chunks
        pending_cr = False
        buffer += text
        start = 0
        n = len(buffer)
        while start < n:
            # find the next line terminator (CRLF, CR or LF)
            lf = buffer.find("\n", start)
            cr = buffer.find("\r", start)
            if lf == -1 and cr == -1:
                break
            if cr != -1 and (lf == -1 or cr < lf):
                end = cr
                if cr + 1 < n:
                    nxt = cr + 2 if buffer[cr + 1] == "\n" else cr + 1
                else:
                    nxt = cr + 1
                    pending_cr = True
            else:
                end = lf
                nxt = lf + 1
            line = buffer[start:end]
            start = nxt
            if not line:
                if data_lines:
                    yield SSEEvent("\n".join(data_lines), event_name or "message", last_id, retry)
                data_lines = []
                event_name = ""
                continue
            if line[0] == ":":
                continue
            field, sep, value = line.partition(":")
            if sep and value.startswith(" "):
                value = value[1:]
            if field == "data":
                data_lines.append(value)
            elif field == "event":
                event_name = value
            elif field == "id" and "\0" not in value:
                last_id = value
            elif field == "retry" and value.isdigit():
                retry = int(value)
        buffer = buffer[start:]
