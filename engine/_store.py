"""The content-store interface every store implements.

An abstract base class rather than a bare Protocol so that a user's store inherits the derived
methods: override ``fetch_stream`` *or* ``fetch_bytes`` and the other one follows.
"""

from __future__ import annotations

import abc
import os
from collections.abc import AsyncIterable, AsyncIterator
from typing import TypeAlias

from ._content import ContentHandle, ContentKind, MediaSource

__all__ = ["Body", "ContentStore"]

Body: TypeAlias = bytes | str | os.PathLike[str] | AsyncIterable[bytes]
"""What ``put`` accepts: bytes, a local path, a URL string (``scheme://...``), or a byte stream."""


class ContentStore(abc.ABC):
    """Where content bytes live. Handles name them; only bytes-in and bytes-out happen here.

    ``provider`` is set by stores that live inside a provider's file API (``"openai"``,
    ``"anthropic"``, ``"gemini"``...), ``None`` for general-purpose stores.
    """

    provider: str | None = None

    @abc.abstractmethod
    async def put(self, body: Body, *, kind: ContentKind | str | None = None,
                  mime_type: str | None = None,
                  display_name: str | None = None) -> ContentHandle:
        """Store ``body`` and return its handle; streams are never joined in memory.

        :raises ContentError: the body cannot be read or stored.
        """

    @abc.abstractmethod
    async def resolve(self, handle: ContentHandle, *,
                      for_provider: str | None = None) -> MediaSource:
        """Return a source the named provider (or any reader, if ``None``) can reach.

        :raises ContentNotFound: the handle names nothing here.
        """

    @abc.abstractmethod
    async def metadata(self, handle: ContentHandle | str) -> ContentHandle:
        """Return the full handle (kind, MIME type, size, name) for a handle or bare id.

        :raises ContentNotFound: the handle names nothing here.
        """

    @abc.abstractmethod
    async def delete(self, handle: ContentHandle | str) -> None:
        """Remove the content. Deleting what is not there raises ``ContentNotFound``."""

    async def fetch_stream(self, handle: ContentHandle) -> AsyncIterator[bytes]:
        """Yield the content's bytes in chunks. Default: one chunk from ``fetch_bytes``.

        :raises ContentNotFound: the handle names nothing here.
        """
        if type(self).fetch_bytes is ContentStore.fetch_bytes:
            raise NotImplementedError(
                f"{type(self).__name__} must override fetch_stream or fetch_bytes"
            )
        yield await self.fetch_bytes(handle)

    async def fetch_bytes(self, handle: ContentHandle) -> bytes:
        """Return all the content's bytes at once. Default: join ``fetch_stream``.

        :raises ContentNotFound: the handle names nothing here.
        """
        if type(self).fetch_stream is ContentStore.fetch_stream:
            raise NotImplementedError(
                f"{type(self).__name__} must override fetch_stream or fetch_bytes"
            )
        chunks = [chunk async for chunk in self.fetch_stream(handle)]
        return b"".join(chunks)
