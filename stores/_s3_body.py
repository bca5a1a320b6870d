"""Opening ``put`` bodies as async chunk streams, and naming what was stored.

A small stand-in with the same shape as the shared body helpers of the local stores (which
also sniff magic bytes); S3Store switches to those once they are on the main branch.
"""

from __future__ import annotations

import mimetypes
import os
import posixpath
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import unquote, urlsplit

import anyio

from plait import ContentError, ContentHandle, ContentKind

__all__ = ["BodyReader", "HeadCapture", "describe", "open_body"]

CHUNK_SIZE = 1024 * 1024

_MIME_KINDS = {
    "application/pdf": ContentKind.DOCUMENT,
    "application/json": ContentKind.DATA,
    "application/zip": ContentKind.ARCHIVE,
    "application/gzip": ContentKind.ARCHIVE,
    "application/x-tar": ContentKind.ARCHIVE,
}
_MIME_FAMILIES = {
    "image": ContentKind.IMAGE, "audio": ContentKind.AUDIO, "video": ContentKind.VIDEO,
    "text": ContentKind.TEXT, "model": ContentKind.THREE_D,
}


class BodyReader:
    """An opened body: its chunks and the hints its origin gave (file name, MIME type)."""

    def __init__(self, chunks: AsyncIterator[bytes], *, name: str | None = None,
                 mime_type: str | None = None) -> None:
        self.chunks = chunks
        self.name = name
        self.mime_type = mime_type


class HeadCapture:
    """Counts the bytes that pass by (and keeps the first few for detection)."""

    def __init__(self) -> None:
        self.head = b""
        self.size = 0

    def feed(self, chunk: bytes) -> None:
        """Count ``chunk``."""
        if len(self.head) < 4096:
            self.head += chunk[: 4096 - len(self.head)]
        self.size += len(chunk)


def _kind_of_mime(mime: str | None) -> ContentKind:
    if not mime:
        return ContentKind.OTHER
    base = mime.split(";", 1)[0].strip().lower()
    return _MIME_KINDS.get(base) or _MIME_FAMILIES.get(base.split("/", 1)[0], ContentKind.OTHER)


def describe(handle_id: str, capture: HeadCapture, reader: BodyReader, *,
             kind: ContentKind | str | None, mime_type: str | None,
             display_name: str | None) -> ContentHandle:
    """Build the handle: explicit arguments first, then the body's hints.

    :raises ContentError: ``kind`` is not a ``ContentKind`` value.
    """
    name = display_name or reader.name
    mime = mime_type or reader.mime_type
    if mime is None and name:
        mime = mimetypes.guess_type(name, strict=False)[0]
    if kind is None:
        resolved = _kind_of_mime(mime)
    else:
        try:
            resolved = ContentKind(kind)
        except ValueError:
            raise ContentError(f"unknown content kind {kind!r}") from None
    return ContentHandle(handle_id, resolved, mime_type=mime, byte_size=capture.size,
                         display_name=name)


async def _iter_bytes(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), CHUNK_SIZE):
        yield data[start:start + CHUNK_SIZE]


async def _iter_checked(source: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    async for chunk in source:
        if isinstance(chunk, (bytearray, memoryview)):
            chunk = bytes(chunk)
        if not isinstance(chunk, bytes):
            raise ContentError(f"a streamed body must yield bytes, got {type(chunk).__name__}")
        yield chunk


async def _iter_file(path: str) -> AsyncIterator[bytes]:
    try:
        file = await anyio.open_file(path, "rb")
    except OSError as exc:
        raise ContentError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    async with file:
        while chunk := await file.read(CHUNK_SIZE):
            yield chunk


@asynccontextmanager
async def open_body(body: object) -> AsyncIterator[BodyReader]:
    """Open a ``put`` body (bytes, path, ``http(s)`` URL, async iterable) as chunks.

    The chunk generator is closed on the way out, whether or not it was drained.

    :raises ContentError: the body cannot be opened or is of an unsupported type.
    """
    if isinstance(body, str) and body.startswith(("http://", "https://")):
        async with _open_url(body) as reader:
            yield reader
        return
    if isinstance(body, (bytes, bytearray, memoryview)):
        reader = BodyReader(_iter_bytes(bytes(body)))
    elif isinstance(body, (str, os.PathLike)):
        path = os.fspath(body)
        if not os.path.isfile(path):
            raise ContentError(f"cannot read {path!r}: not a regular file")
        reader = BodyReader(_iter_file(path), name=os.path.basename(path))
    elif isinstance(body, AsyncIterable):
        reader = BodyReader(_iter_checked(body))
    else:
        raise ContentError(f"cannot store a body of type {type(body).__name__}")
    try:
        yield reader
    finally:
        await reader.chunks.aclose()  # type: ignore[attr-defined]


@asynccontextmanager
async def _open_url(url: str) -> AsyncIterator[BodyReader]:
    import httpx

    async with httpx.AsyncClient(follow_redirects=True) as client:
        try:
            async with client.stream("GET", url) as response:
                if response.status_code >= 400:
                    raise ContentError(
                        f"fetching the body URL failed: HTTP {response.status_code}"
                    )
                name = posixpath.basename(unquote(urlsplit(url).path)) or None
                yield BodyReader(response.aiter_bytes(CHUNK_SIZE), name=name,
                                 mime_type=response.headers.get("content-type"))
        except httpx.HTTPError as exc:
            raise ContentError(f"fetching the body URL failed: {type(exc).__name__}") from None
