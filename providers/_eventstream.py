"""Incremental parser (and encoder) for AWS's binary ``application/vnd.amazon.eventstream``.

Bedrock's ``converse-stream`` answers with a sequence of frames; chunks from the socket split them
anywhere, so the parser buffers only the current, incomplete frame. Each frame is::

    total_length:u32 headers_length:u32 prelude_crc:u32 headers payload message_crc:u32

(big-endian; both CRCs are CRC-32 as computed by ``zlib.crc32``: the first over the 8 prelude
bytes, the second over everything before it). A corrupted or truncated frame raises
``EventStreamError`` instead of yielding garbage: a half-parsed tool call is worse than none.

The encoder exists so emulators and tests can produce real frames with the same layout.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import AsyncGenerator, AsyncIterable, Mapping
from typing import TypeAlias

import msgspec

from plait._errors import ProviderError

__all__ = ["EventStreamError", "Frame", "HeaderValue", "encode_frame", "iter_frames"]

HeaderValue: TypeAlias = bool | int | bytes | str | uuid.UUID
"""A decoded header value (timestamps come back as integer milliseconds since the epoch)."""

_PRELUDE = struct.Struct(">III")
_CRC = struct.Struct(">I")
_MIN_FRAME = _PRELUDE.size + _CRC.size
# AWS documents 16 MiB as the maximum payload of one message; anything far beyond that is a
# corrupted length field, and reading it would mean buffering unbounded garbage.
_MAX_FRAME = 24 * 1024 * 1024


class EventStreamError(ProviderError):
    """The byte stream is not a valid event stream (bad CRC, bad lengths, cut mid-frame)."""

    def __init__(self, message: str, *, provider: str = "bedrock") -> None:
        super().__init__(message, provider=provider)


class Frame(msgspec.Struct, frozen=True):
    """One decoded message: its headers and raw payload."""

    headers: dict[str, HeaderValue]
    payload: bytes

    def header(self, name: str) -> str | None:
        """A string header (``:event-type``, ``:message-type``...), or None."""
        value = self.headers.get(name)
        return value if isinstance(value, str) else None


def _decode_headers(data: memoryview) -> dict[str, HeaderValue]:
    headers: dict[str, HeaderValue] = {}
    pos = 0
    end = len(data)
    try:
        while pos < end:
            name_len = data[pos]
            pos += 1
            name = bytes(data[pos:pos + name_len]).decode("utf-8")
            pos += name_len
            kind = data[pos]
            pos += 1
            value: HeaderValue
            if kind == 0:
                value = True
            elif kind == 1:
                value = False
            elif kind in (2, 3, 4, 5, 8):
                width = {2: 1, 3: 2, 4: 4, 5: 8, 8: 8}[kind]
                if pos + width > end:
                    raise EventStreamError("event-stream header value runs past the headers")
                value = int.from_bytes(data[pos:pos + width], "big", signed=True)
                pos += width
            elif kind in (6, 7):
                (length,) = struct.unpack_from(">H", data, pos)
                pos += 2
                if pos + length > end:
                    raise EventStreamError("event-stream header value runs past the headers")
                raw = bytes(data[pos:pos + length])
                pos += length
                value = raw if kind == 6 else raw.decode("utf-8")
            elif kind == 9:
                if pos + 16 > end:
                    raise EventStreamError("event-stream header value runs past the headers")
                value = uuid.UUID(bytes=bytes(data[pos:pos + 16]))
                pos += 16
            else:
                raise EventStreamError(f"unknown event-stream header type {kind}")
            headers[name] = value
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise EventStreamError(f"malformed event-stream headers: {exc}") from None
    if pos != end:
        raise EventStreamError("event-stream headers overrun their declared length")
    return headers


def _decode_frame(frame: bytes) -> Frame:
    total, headers_len, _ = _PRELUDE.unpack_from(frame)
    view = memoryview(frame)
    (message_crc,) = _CRC.unpack_from(frame, total - _CRC.size)
    if zlib.crc32(view[:total - _CRC.size]) != message_crc:
        raise EventStreamError("event-stream message CRC mismatch")
    start = _PRELUDE.size
    headers = _decode_headers(view[start:start + headers_len])
    payload = bytes(view[start + headers_len:total - _CRC.size])
    return Frame(headers, payload)


async def iter_frames(chunks: AsyncIterable[bytes]) -> AsyncGenerator[Frame, None]:
    """Yield frames as soon as each is complete.

    :raises EventStreamError: on a CRC mismatch, impossible lengths, or a stream that ends
        inside a frame.
    """
    buffer = bytearray()
    need = _PRELUDE.size  # bytes needed before the next decision
    total = 0  # length of the frame being assembled, once its prelude is checked
    async for chunk in chunks:
        buffer += chunk
        while len(buffer) >= need:
            if not total:
                total, headers_len, prelude_crc = _PRELUDE.unpack_from(buffer)
                if zlib.crc32(memoryview(buffer)[:8]) != prelude_crc:
                    raise EventStreamError("event-stream prelude CRC mismatch")
                if (total < _MIN_FRAME or total > _MAX_FRAME
                        or headers_len > total - _MIN_FRAME):
                    raise EventStreamError(f"event-stream frame length {total} is invalid")
                need = total
                continue
            frame = bytes(buffer[:total])
            del buffer[:total]
            total = 0
            need = _PRELUDE.size
            yield _decode_frame(frame)
    if buffer:
        raise EventStreamError(
            f"event stream ended inside a frame ({len(buffer)} bytes of an unfinished frame)")


def _encode_header(name: str, value: HeaderValue) -> bytes:
    raw_name = name.encode("utf-8")
    head = bytes([len(raw_name)]) + raw_name
    if isinstance(value, bool):
        return head + bytes([0 if value else 1])
    if isinstance(value, int):
        return head + b"\x05" + value.to_bytes(8, "big", signed=True)
    if isinstance(value, uuid.UUID):
        return head + b"\x09" + value.bytes
    if isinstance(value, str):
        data, kind = value.encode("utf-8"), b"\x07"
    else:
        data, kind = bytes(value), b"\x06"
    return head + kind + struct.pack(">H", len(data)) + data


def encode_frame(headers: Mapping[str, HeaderValue], payload: bytes) -> bytes:
    """One frame with CRCs, as a server sends it (integers are encoded as 64-bit longs)."""
    raw_headers = b"".join(_encode_header(k, v) for k, v in headers.items())
    total = _PRELUDE.size + len(raw_headers) + len(payload) + _CRC.size
    prelude = struct.pack(">II", total, len(raw_headers))
    prelude += _CRC.pack(zlib.crc32(prelude))
    body = prelude + raw_headers + payload
    return body + _CRC.pack(zlib.crc32(body))
