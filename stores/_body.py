"""Turning whatever ``put`` was given into one async stream of chunks, plus what detection needs.

Every store accepts the same bodies (bytes, a local path, an ``http(s)://`` URL, an async
iterable of bytes), so the normalising lives here once. Nothing is joined in memory: paths are
read in chunks, URLs are streamed with httpx, iterables are passed through.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import unquote, urlsplit

import httpx

from plait import ContentError, ContentHandle, ContentKind
from plait._kinds import SNIFF_BYTES, detect_mime_type, kind_of_mime

from ._readahead import DEFAULT_CHUNK_SIZE, FileChunks, iter_file

__all__ = ["BodyReader", "HeadCapture", "describe", "open_body"]


class BodyReader:
    """An opened body: its chunks and the hints its origin gave (file name, declared MIME type)."""

    def __init__(self, chunks: AsyncIterator[bytes], *, name: str | None = None,
                 mime_type: str | None = None) -> None:
        self.chunks = chunks
        self.name = name
        self.mime_type = mime_type


class HeadCapture:
    """Keeps the first ``SNIFF_BYTES`` of a stream for kind detection while chunks pass by."""

    def __init__(self) -> None:
        self._head = bytearray()
        self.size = 0

    def feed(self, chunk: bytes) -> None:
        """Count ``chunk`` and keep what detection still needs of it."""
        missing = SNIFF_BYTES - len(self._head)
        if missing > 0:
            self._head += chunk[:missing]
        self.size += len(chunk)

    @property
    def head(self) -> bytes:
        """The captured leading bytes."""
        return bytes(self._head)


def describe(handle_id: str, capture: HeadCapture, reader: BodyReader, *,
             kind: ContentKind | str | None, mime_type: str | None,
             display_name: str | None) -> ContentHandle:
    """Build the handle for stored bytes: explicit arguments first, then detection.

    :raises ContentError: ``kind`` is not a ``ContentKind`` value.
    """
    mime = detect_mime_type(capture.head, mime_type=mime_type or reader.mime_type,
                            name=display_name or reader.name)
    if kind is None:
        resolved_kind = kind_of_mime(mime)
    else:
        try:
            resolved_kind = ContentKind(kind)
        except ValueError:
            valid = ", ".join(k.value for k in ContentKind)
            raise ContentError(f"unknown content kind {kind!r}; use one of: {valid}") from None
    return ContentHandle(handle_id, resolved_kind, mime_type=mime, byte_size=capture.size,
                         display_name=display_name or reader.name)


def _redacted(url: str) -> str:
    """A URL without credentials, query or fragment: presigned links carry secrets there."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}{parts.path}"


async def _iter_bytes(data: bytes) -> AsyncIterator[bytes]:
    if data:
        yield data


async def _iter_checked(source: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    iterator = aiter(source)
    try:
        async for chunk in iterator:
            if isinstance(chunk, (bytearray, memoryview)):
                chunk = bytes(chunk)
            if not isinstance(chunk, bytes):
                raise ContentError(
                    f"a streamed body must yield bytes, got {type(chunk).__name__}"
                )
            if chunk:
                yield chunk
    finally:
        # Close the caller's generator now, in this task, rather than at garbage collection.
        closer = getattr(iterator, "aclose", None)
        if closer is not None:
            await closer()


def _open_path(path: str, chunk_size: int) -> FileChunks:
    try:
        file = open(path, "rb", buffering=0)  # noqa: SIM115 - FileChunks owns and closes it
    except OSError as exc:
        raise ContentError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    if not os.path.isfile(path):
        file.close()
        raise ContentError(f"cannot read {path!r}: not a regular file")
    return iter_file(file, chunk_size=chunk_size)


@asynccontextmanager
async def _open_url(url: str, client: httpx.AsyncClient | None,
                    chunk_size: int) -> AsyncIterator[BodyReader]:
    shown = _redacted(url)
    owned = client is None
    http = client if client is not None else httpx.AsyncClient(follow_redirects=True)
    try:
        async with http.stream("GET", url) as response:
            if response.status_code >= 400:
                raise ContentError(f"fetching {shown} failed: HTTP {response.status_code}")
            name = posixpath.basename(unquote(urlsplit(url).path)) or None
            mime = response.headers.get("content-type")

            async def chunks() -> AsyncIterator[bytes]:
                try:
                    async for chunk in response.aiter_bytes(chunk_size):
                        yield chunk
                except httpx.HTTPError as exc:
                    raise ContentError(f"fetching {shown} failed: {type(exc).__name__}") from None

            yield BodyReader(chunks(), name=name, mime_type=mime)
    except httpx.HTTPError as exc:
        raise ContentError(f"fetching {shown} failed: {type(exc).__name__}") from None
    finally:
        if owned:
            await http.aclose()


@asynccontextmanager
async def open_body(body: object, *, chunk_size: int = DEFAULT_CHUNK_SIZE,
                    client: httpx.AsyncClient | None = None) -> AsyncIterator[BodyReader]:
    """Open a ``put`` body as a stream of chunks.

    ``str`` bodies with an ``http://`` or ``https://`` scheme are URLs (``file://`` is a path);
    other strings and ``os.PathLike`` objects are local paths.

    :raises ContentError: the body cannot be opened or is of an unsupported type.
    """
    if isinstance(body, (bytes, bytearray, memoryview)):
        yield BodyReader(_iter_bytes(bytes(body)))
        return
    if isinstance(body, str) and "://" in body:
        scheme = body.split("://", 1)[0].lower()
        if scheme in ("http", "https"):
            async with _open_url(body, client, chunk_size) as reader:
                yield reader
            return
        if scheme == "file":
            body = unquote(urlsplit(body).path)
        else:
            raise ContentError(f"cannot fetch a body from a {scheme}:// URL; "
                               "pass bytes, a path, an http(s) URL or an async iterable")
    if isinstance(body, (str, os.PathLike)):
        path = os.fspath(body)
        if not isinstance(path, str):
            raise ContentError("byte-string paths are not supported; pass a str path")
        chunks = _open_path(path, chunk_size)
        try:
            yield BodyReader(chunks, name=os.path.basename(path))
        finally:
            await chunks.aclose()
        return
    if isinstance(body, AsyncIterable):
        yield BodyReader(_iter_checked(body))
        return
    raise ContentError(f"unsupported body type {type(body).__name__}; pass bytes, a path, "
                       "an http(s) URL or an async iterable of bytes")
