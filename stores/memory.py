"""``MemoryStore``: content kept in process memory, for tests and short-lived runs."""

from __future__ import annotations

from collections.abc import AsyncIterator

from plait import (
    Body,
    ContentHandle,
    ContentKind,
    ContentNotFound,
    ContentStore,
    InlineSource,
    MediaSource,
)
from plait._content import new_handle_id

from ._body import HeadCapture, describe, open_body
from ._readahead import DEFAULT_CHUNK_SIZE

__all__ = ["MemoryStore"]


class MemoryStore(ContentStore):
    """A content store in a dict. Resolves every handle to inline bytes.

    ``fetch_stream`` hands the bytes out in slices of ``chunk_size``, like a file store would.
    """

    def __init__(self, *, chunk_size: int = DEFAULT_CHUNK_SIZE) -> None:
        self._items: dict[str, tuple[ContentHandle, bytes]] = {}
        self._chunk_size = chunk_size

    def _get(self, handle: ContentHandle | str) -> tuple[ContentHandle, bytes]:
        handle_id = handle if isinstance(handle, str) else handle.id
        try:
            return self._items[handle_id]
        except KeyError:
            raise ContentNotFound(f"no content {handle_id!r} in this memory store") from None

    async def put(self, body: Body, *, kind: ContentKind | str | None = None,
                  mime_type: str | None = None,
                  display_name: str | None = None) -> ContentHandle:
        """Store ``body`` in memory and return its handle.

        :raises ContentError: the body cannot be read, or ``kind`` is not a valid kind.
        """
        chunks: list[bytes] = []
        capture = HeadCapture()
        async with open_body(body, chunk_size=self._chunk_size) as reader:
            async for chunk in reader.chunks:
                capture.feed(chunk)
                chunks.append(chunk)
        handle = describe(new_handle_id(), capture, reader, kind=kind, mime_type=mime_type,
                          display_name=display_name)
        self._items[handle.id] = (handle, b"".join(chunks))
        return handle

    async def resolve(self, handle: ContentHandle, *,
                      for_provider: str | None = None) -> MediaSource:
        """The content as an inline source.

        :raises ContentNotFound: the handle names nothing here.
        """
        meta, data = self._get(handle)
        return InlineSource(data=data, mime_type=meta.mime_type or "application/octet-stream")

    async def metadata(self, handle: ContentHandle | str) -> ContentHandle:
        """The stored handle for a handle or bare id.

        :raises ContentNotFound: the handle names nothing here.
        """
        return self._get(handle)[0]

    async def delete(self, handle: ContentHandle | str) -> None:
        """Forget the content.

        :raises ContentNotFound: the handle names nothing here.
        """
        meta, _ = self._get(handle)
        del self._items[meta.id]

    async def fetch_bytes(self, handle: ContentHandle) -> bytes:
        """All the bytes (no copy).

        :raises ContentNotFound: the handle names nothing here.
        """
        return self._get(handle)[1]

    async def fetch_stream(self, handle: ContentHandle) -> AsyncIterator[bytes]:
        """The bytes in slices of ``chunk_size``.

        :raises ContentNotFound: the handle names nothing here.
        """
        data = self._get(handle)[1]
        view = memoryview(data)
        for start in range(0, len(data), self._chunk_size):
            yield bytes(view[start:start + self._chunk_size])
