"""Turn what ``put`` accepts (bytes, a path, a URL, a byte stream, another store's content) into
a byte source that can be read, and re-read where that is possible, in bounded chunks.

Re-reading matters for uploads: a failed upload is retried from the start only when the source
can be opened again; a one-shot stream cannot, and the error says so.
"""

from __future__ import annotations

import mimetypes
import os
from collections.abc import AsyncIterable, AsyncIterator

import anyio
import httpx

from plait._content import ContentHandle
from plait._errors import ContentError
from plait._store import Body, ContentStore

from ._http import DEFAULT_TIMEOUT, raise_for_status

__all__ = ["ByteSource", "source_for"]

CHUNK = 1 << 20


class ByteSource:
    """Bytes to upload: ``open()`` yields them in chunks; ``reopenable`` says if it can again."""

    size: int | None = None
    mime_type: str | None = None
    name: str | None = None
    reopenable: bool = True

    def open(self) -> AsyncIterator[bytes]:
        """A fresh iterator over the bytes.

        :raises ContentError: a one-shot stream was already read.
        """
        raise NotImplementedError


class _Bytes(ByteSource):
    def __init__(self, data: bytes) -> None:
        self._data = data
        self.size = len(data)

    async def open(self) -> AsyncIterator[bytes]:
        view = memoryview(self._data)
        for start in range(0, len(view), CHUNK):
            yield bytes(view[start:start + CHUNK])


class _Path(ByteSource):
    def __init__(self, path: str) -> None:
        self._path = path
        try:
            self.size = os.stat(path).st_size
        except OSError as exc:
            raise ContentError(f"cannot read {os.path.basename(path)!r}: {exc.strerror}") from None
        self.name = os.path.basename(path)
        self.mime_type = mimetypes.guess_type(path)[0]

    async def open(self) -> AsyncIterator[bytes]:
        async with await anyio.open_file(self._path, "rb") as fh:
            while chunk := await fh.read(CHUNK):
                yield chunk


class _Url(ByteSource):
    def __init__(self, url: str, client: httpx.AsyncClient | None) -> None:
        self._url = url
        self._client = client
        path = httpx.URL(url).path
        self.name = os.path.basename(path) or None
        self.mime_type = mimetypes.guess_type(path)[0]

    async def open(self) -> AsyncIterator[bytes]:
        own = self._client is None
        client = self._client or httpx.AsyncClient(timeout=DEFAULT_TIMEOUT,
                                                   follow_redirects=True)
        try:
            async with client.stream("GET", self._url) as response:
                await raise_for_status(response, "url", what="fetch")
                async for chunk in response.aiter_bytes():
                    yield chunk
        finally:
            if own:
                await client.aclose()


class _Stream(ByteSource):
    reopenable = False

    def __init__(self, chunks: AsyncIterable[bytes]) -> None:
        self._chunks: AsyncIterable[bytes] | None = chunks

    async def open(self) -> AsyncIterator[bytes]:
        chunks, self._chunks = self._chunks, None
        if chunks is None:
            raise ContentError("a one-shot byte stream cannot be read twice (retry impossible)")
        async for chunk in chunks:
            yield chunk


class _Stored(ByteSource):
    def __init__(self, store: ContentStore, handle: ContentHandle) -> None:
        self._store = store
        self._handle = handle
        self.size = handle.byte_size
        self.mime_type = handle.mime_type
        self.name = handle.display_name

    def open(self) -> AsyncIterator[bytes]:
        return self._store.fetch_stream(self._handle)


def source_for(body: Body | tuple[ContentStore, ContentHandle], *,
               client: httpx.AsyncClient | None = None) -> ByteSource:
    """The byte source for ``body``: bytes, a path, a URL, a stream, or ``(store, handle)``.

    :raises ContentError: a path that cannot be read, or a body of an unsupported type.
    """
    if isinstance(body, tuple):
        return _Stored(*body)
    if isinstance(body, bytes | bytearray | memoryview):
        return _Bytes(bytes(body))
    if isinstance(body, str) and "://" in body:
        return _Url(body, client)
    if isinstance(body, str | os.PathLike):
        return _Path(os.fspath(body))
    if isinstance(body, AsyncIterable):
        return _Stream(body)
    raise ContentError(f"cannot store a body of type {type(body).__name__}")
