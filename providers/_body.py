"""Media encoding for request bodies: an encode-once cache and streamed bodies for big requests.

Two costs dominate a request with media: base64 (≈0.8 GB/s of output) and holding the request
twice (the bytes and their base64 text). So:

- ``EncodeCache`` keeps each item's encoded text per identity (its handle id, the bytes object,
  or a local file's path/mtime/size) and wire encoding, so a conversation that resends the same
  image every turn encodes it once. Bounded by ``max_bytes`` (least recently used out first).
- ``MediaEncoder`` is what a wire module's ``build_request`` calls for every media part:
  ``media.base64(part)`` or ``media.data_url(part)`` return the text, or, for an item at least
  ``stream_threshold`` bytes, a ``MediaRef`` placeholder.
- ``encode_body(wire)`` turns the wire dict into ``bytes`` when it holds no ``MediaRef``, else
  into a ``StreamedBody``: an async iterable (re-iterable, for retries) of the JSON prefix,
  base64 chunks read from the bytes or the file, and the suffix, with an exact
  ``content_length``. Nothing but the original bytes and one chunk is in memory at once.

JSON encoding is msgspec's (≈9× ``json.dumps`` on base64-heavy bodies).
"""

from __future__ import annotations

import base64
import os
import re
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

import anyio
import msgspec

from plait import ContentRejected, InlineSource, LocalPathSource
from plait._parts import MediaPart

__all__ = ["EncodeCache", "MediaEncoder", "MediaRef", "StreamedBody", "encode_body"]

_CHUNK = 3 * 128 * 1024  # a multiple of 3: chunks encode to base64 without padding


class EncodeCache:
    """Encoded media text per (identity, encoding); LRU-bounded by ``max_bytes`` of text."""

    def __init__(self, max_bytes: int = 256 << 20) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[tuple[Any, ...], tuple[object, str]] = OrderedDict()
        self._size = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[Any, ...], anchor: object = None) -> str | None:
        """The cached text for ``key``; a non-``None`` ``anchor`` must be the very object it
        was stored with (keys built from ``id()`` are only unique while their object lives)."""
        entry = self._items.get(key)
        if entry is None or entry[0] is not anchor:
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return entry[1]

    def put(self, key: tuple[Any, ...], anchor: object, text: str) -> None:
        """Store ``text``; ``anchor`` (if any) is kept alive so an ``id()`` key stays unique."""
        self.misses += 1
        if len(text) > self.max_bytes:
            return
        old = self._items.pop(key, None)
        if old is not None:
            self._size -= len(old[1])
        self._items[key] = (anchor, text)
        self._size += len(text)
        while self._size > self.max_bytes:
            _, (_, dropped) = self._items.popitem(last=False)
            self._size -= len(dropped)

    def __len__(self) -> int:
        return len(self._items)


class MediaRef:
    """Stands in a wire dict for a big item's base64 text, streamed by ``encode_body``.

    Deliberately not a msgspec Struct: the JSON encoder must hand it to ``encode_body``'s hook.
    """

    __slots__ = ("prefix", "size", "source")

    def __init__(self, source: InlineSource | LocalPathSource, prefix: str, size: int) -> None:
        self.source = source
        self.prefix = prefix
        self.size = size

    def __repr__(self) -> str:
        return f"MediaRef({self.prefix or 'base64'}, {self.size} bytes)"


class MediaEncoder:
    """Base64 / data-URL text for media parts, cached and (above a threshold) streamed."""

    def __init__(self, cache: EncodeCache | None = None, *,
                 stream_threshold: int | None = None) -> None:
        self.cache = cache
        self.stream_threshold = stream_threshold

    def base64(self, part: MediaPart) -> str | MediaRef:
        """The part's bytes as standard base64 (or a ``MediaRef`` to stream)."""
        return self._encode(part, "")

    def data_url(self, part: MediaPart, mime_type: str | None = None) -> str | MediaRef:
        """The part's bytes as a ``data:<mime>;base64,`` URL (or a ``MediaRef`` to stream)."""
        mime = mime_type or part.media_type or "application/octet-stream"
        return self._encode(part, f"data:{mime};base64,")

    def _encode(self, part: MediaPart, prefix: str) -> str | MediaRef:
        source = part.source
        if isinstance(source, InlineSource):
            size = len(source.data)
            # A handle names immutable content: bytes fetched again for it on a later turn are
            # the same item. Without a handle, the bytes object itself is the identity.
            anchor: object = None if part.handle else source.data
            key: tuple[Any, ...] = (("handle", part.handle.id) if part.handle
                                    else ("bytes", id(source.data)), prefix)
        elif isinstance(source, LocalPathSource):
            try:
                stat = os.stat(source.path)
            except OSError as exc:
                raise ContentRejected(f"cannot read local file for {part.kind} part: "
                                      f"{exc.strerror}", part=part.name, limit="readable file"
                                      ) from None
            size = stat.st_size
            anchor = None
            key = ("path", source.path, stat.st_mtime_ns, size, prefix)
        else:
            raise ContentRejected(f"{part.kind} part has no inline bytes to encode "
                                  f"({type(source).__name__})", part=part.name,
                                  limit="inline or local source")
        if self.stream_threshold is not None and size >= self.stream_threshold:
            return MediaRef(source, prefix, size)
        if self.cache is not None:
            hit = self.cache.get(key, anchor)
            if hit is not None:
                return hit
        if isinstance(source, InlineSource):
            data = source.data
        else:
            with open(source.path, "rb") as fh:
                data = fh.read()
        text = prefix + base64.b64encode(data).decode("ascii")
        if self.cache is not None:
            self.cache.put(key, anchor, text)
        return text


class StreamedBody:
    """A request body produced piecewise; iterable any number of times (retries)."""

    def __init__(self, pieces: list[bytes | MediaRef]) -> None:
        self._pieces = pieces
        self.content_length = sum(
            len(p) if isinstance(p, bytes) else len(p.prefix) + (p.size + 2) // 3 * 4
            for p in pieces
        )

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[bytes]:
        for piece in self._pieces:
            if isinstance(piece, bytes):
                yield piece
                continue
            if piece.prefix:
                yield piece.prefix.encode("ascii")
            source = piece.source
            if isinstance(source, InlineSource):
                view = memoryview(source.data)
                for start in range(0, len(view), _CHUNK):
                    yield base64.b64encode(view[start:start + _CHUNK])
            else:
                async for chunk in _file_base64(source.path):
                    yield chunk

    async def read(self) -> bytes:
        """The whole body joined (tests and small bodies only)."""
        return b"".join([chunk async for chunk in self])


async def _file_base64(path: str) -> AsyncIterator[bytes]:
    carry = b""
    async with await anyio.open_file(path, "rb") as fh:
        while True:
            chunk = await fh.read(_CHUNK)
            if not chunk:
                break
            data = carry + chunk
            cut = len(data) - len(data) % 3
            carry = data[cut:]
            if cut:
                yield base64.b64encode(data[:cut])
    if carry:
        yield base64.b64encode(carry)


def encode_body(wire: Any) -> bytes | StreamedBody:
    """JSON bytes of ``wire``; a ``StreamedBody`` when it holds ``MediaRef`` placeholders."""
    refs: list[MediaRef] = []
    nonce = secrets.token_hex(8)

    def hook(value: Any) -> Any:
        if isinstance(value, MediaRef):
            refs.append(value)
            return f"@@plait-{nonce}-{len(refs) - 1}@@"
        raise TypeError(f"cannot encode {type(value).__name__} in a request body")

    raw = msgspec.json.encode(wire, enc_hook=hook)
    if not refs:
        return raw
    pattern = re.compile(rb"@@plait-" + nonce.encode() + rb"-(\d+)@@")
    pieces: list[bytes | MediaRef] = []
    last = 0
    for match in pattern.finditer(raw):
        pieces.append(raw[last:match.start()])
        pieces.append(refs[int(match.group(1))])
        last = match.end()
    pieces.append(raw[last:])
    return StreamedBody(pieces)

