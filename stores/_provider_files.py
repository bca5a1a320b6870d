"""What every provider file store shares: records of uploaded files, retries, expiry, origins.

A provider's file API is write-mostly: most of them cannot hand the bytes back. So each record
keeps the *origin* it was uploaded from (a local path, the bytes, a URL, or another store's
content) when that origin can be read again; downloads come from there, and an expired file is
re-uploaded from there. A record is written only after the provider confirmed the upload, so a
cancelled or failed upload leaves nothing half-recorded, and a file the provider created before
the cancellation landed is deleted again.
"""

from __future__ import annotations

import abc
import contextlib
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Self

import anyio
import httpx

from plait._aio import closing, pumped
from plait._content import (
    ContentHandle,
    ContentKind,
    MediaSource,
    ProviderFileSource,
    new_handle_id,
)
from plait._errors import AuthenticationError, ContentNotFound, ContentRejected
from plait._kinds import kind_of_mime
from plait._progress import ProgressCallback, count_progress
from plait._store import Body, ContentStore
from plait.telemetry import current as current_telemetry

from ._http import DEFAULT_TIMEOUT, is_retryable
from ._sources import ByteSource, source_for

__all__ = ["ProviderFileStore", "Uploaded", "check_size"]


@dataclass(frozen=True, slots=True)
class Uploaded:
    """What a provider's upload call returned: the file's source and its size in bytes."""

    source: ProviderFileSource
    size: int


@dataclass(slots=True)
class _Record:
    handle: ContentHandle
    source: ProviderFileSource
    origin: ByteSource | None


class ProviderFileStore(ContentStore, abc.ABC):
    """A ``ContentStore`` that lives in one provider's file API.

    ``keep`` is an optional store that receives a copy of everything ``put`` here, so the bytes
    stay readable (and re-uploadable) when the provider cannot return them. ``on_progress`` gets
    upload progress; ``max_retries`` repeats uploads that failed with 5xx, 429 or a broken
    connection when the source can be read again.
    """

    provider: str = ""
    env_key: str = ""
    default_base_url: str = ""
    downloadable: bool = False
    """Whether the provider's API can return an uploaded file's bytes."""
    max_file_bytes: int | None = None
    """The provider's per-file limit (checked before any request when the size is known)."""

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None,
                 client: httpx.AsyncClient | None = None, keep: ContentStore | None = None,
                 max_retries: int = 2, retry_backoff: float = 0.5,
                 on_progress: ProgressCallback | None = None,
                 clock: Callable[[], float] = time.time,
                 max_file_bytes: int | None = None) -> None:
        self._api_key = api_key
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self._client = client
        self._own_client = client is None
        self.keep = keep
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self.on_progress = on_progress
        self.clock = clock
        if max_file_bytes is not None:
            self.max_file_bytes = max_file_bytes
        self._records: dict[str, _Record] = {}
        self._locks: dict[str, anyio.Lock] = {}

    def __repr__(self) -> str:  # the key is deliberately absent
        return f"{type(self).__name__}(base_url={self.base_url!r}, files={len(self._records)})"

    # --- plumbing for subclasses ------------------------------------------------------------

    @property
    def client(self) -> httpx.AsyncClient:
        """The HTTP client (created on first use when none was given)."""
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=DEFAULT_TIMEOUT)
        return self._client

    def api_key(self) -> str:
        """The key from the constructor or the environment.

        :raises AuthenticationError: no key is configured.
        """
        key = self._api_key or os.environ.get(self.env_key)
        if not key:
            raise AuthenticationError(
                f"no API key: pass api_key= or set {self.env_key}", provider=self.provider
            )
        return key

    async def aclose(self) -> None:
        """Close the HTTP client if this store created it."""
        if self._own_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @abc.abstractmethod
    async def _upload(self, source: ByteSource, chunks: AsyncIterator[bytes], *,
                      mime_type: str, filename: str) -> Uploaded:
        """Send ``chunks`` (the bytes of ``source``) to the provider; one attempt."""

    @abc.abstractmethod
    async def _remote_delete(self, source: ProviderFileSource) -> None:
        """Delete the provider's copy."""

    @abc.abstractmethod
    async def _describe(self, file_id: str) -> tuple[ProviderFileSource, int | None, str | None]:
        """Look up an existing file: its source, size and name."""

    async def _download(self, source: ProviderFileSource) -> AsyncIterator[bytes]:
        """Stream the provider's copy (only where ``downloadable``)."""
        raise ContentNotFound(f"{self.provider} files cannot be downloaded")
        yield b""  # pragma: no cover - makes this an async generator

    # --- uploads ------------------------------------------------------------------------------

    async def _upload_with_retry(self, source: ByteSource, handle_id: str, *,
                                 mime_type: str, filename: str,
                                 on_progress: ProgressCallback | None) -> Uploaded:
        if self.max_file_bytes is not None:
            check_size(source.size, self.max_file_bytes, self.provider)
        attempt = 0
        while True:
            chunks = count_progress(source.open(), on_progress or self.on_progress,
                                    handle_id=handle_id, provider=self.provider,
                                    total=source.size)

            async def send(stream: AsyncIterator[bytes]) -> Uploaded:
                return await self._upload(source, stream, mime_type=mime_type,
                                          filename=filename)
            try:
                return await pumped(chunks, send)
            except Exception as exc:
                if attempt >= self.max_retries or not is_retryable(exc) or not source.reopenable:
                    raise
                delay = getattr(exc, "retry_after", None)
                await anyio.sleep(delay if delay is not None
                                  else self.retry_backoff * (2 ** attempt))
                attempt += 1
            finally:
                await chunks.aclose()  # type: ignore[attr-defined]

    async def _record(self, handle: ContentHandle, source: ByteSource,
                      on_progress: ProgressCallback | None) -> _Record:
        """Upload ``source`` for ``handle`` and record it; delete the file if cancelled after."""
        up = await self._upload_with_retry(
            source, handle.id, mime_type=handle.mime_type or "application/octet-stream",
            filename=_safe_name(handle.display_name, handle.id), on_progress=on_progress)
        try:
            await anyio.lowlevel.checkpoint()
        except BaseException:
            await self._forget_remote(up.source)
            raise
        if handle.byte_size is None:
            handle = ContentHandle(handle.id, handle.kind, handle.mime_type, up.size,
                                   handle.display_name)
        record = _Record(handle, up.source, source if source.reopenable else None)
        self._records[handle.id] = record
        return record

    async def _forget_remote(self, source: ProviderFileSource) -> None:
        """Delete a provider file we will not record (shielded: it runs while cancelling)."""
        # Best effort: the error that got us here is what matters.
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await self._remote_delete(source)

    def _lock(self, handle_id: str) -> anyio.Lock:
        lock = self._locks.get(handle_id)
        if lock is None:
            lock = self._locks[handle_id] = anyio.Lock()
        return lock

    async def put(self, body: Body, *, kind: ContentKind | str | None = None,
                  mime_type: str | None = None,
                  display_name: str | None = None) -> ContentHandle:
        """Upload ``body`` (streamed) to the provider's file API and return its handle.

        :raises ContentError: the body cannot be read.
        :raises ProviderError: the provider refused the upload (typed subclasses for 401/429).
        """
        if self.keep is not None:
            kept = await self.keep.put(body, kind=kind, mime_type=mime_type,
                                       display_name=display_name)
            source = source_for((self.keep, kept))
            handle = kept
        else:
            source = source_for(body, client=self.client)
            mime = mime_type or source.mime_type or "application/octet-stream"
            handle = ContentHandle(new_handle_id(), _kind(kind, mime), mime, source.size,
                                   display_name or source.name)
        async with self._lock(handle.id):
            return (await self._record(handle, source, None)).handle

    async def copy_from(self, origin: ContentStore, handle: ContentHandle, *,
                        on_progress: ProgressCallback | None = None) -> ProviderFileSource:
        """Make this provider hold ``handle``'s bytes, streamed from ``origin``; once per handle.

        The handle keeps its id; ``origin`` stays the place its bytes are read back from.

        :raises ContentNotFound: ``origin`` does not hold the handle.
        :raises ProviderError: the upload failed.
        """
        if self.holds(handle):
            return self._get(handle).source
        full = await origin.metadata(handle)
        return await self.upload_for(full, (origin, full), on_progress=on_progress)

    async def upload_for(self, handle: ContentHandle,
                         body: Body | tuple[ContentStore, ContentHandle], *,
                         on_progress: ProgressCallback | None = None) -> ProviderFileSource:
        """Upload ``body`` as the bytes of ``handle`` (kept under its id); once per handle.

        :raises ContentError: the body cannot be read.
        :raises ProviderError: the upload failed.
        """
        async with self._lock(handle.id):
            record = self._records.get(handle.id)
            if record is not None and not self._expired(record.source):
                return record.source
            source = source_for(body, client=self.client)
            with current_telemetry().content_transfer(
                    "upload", destination=self.provider, handle_id=handle.id,
                    mime_type=handle.mime_type, byte_size=handle.byte_size or source.size):
                return (await self._record(handle, source, on_progress)).source

    async def attach(self, file_id: str, *, kind: ContentKind | str | None = None,
                     mime_type: str | None = None,
                     display_name: str | None = None) -> ContentHandle:
        """A handle for a file already in the provider's store (uploaded elsewhere).

        :raises ContentNotFound: the provider has no such file.
        """
        source, size, name = await self._describe(file_id)
        mime = mime_type or source.mime_type or "application/octet-stream"
        handle = ContentHandle(new_handle_id(), _kind(kind, mime), mime, size,
                               display_name or name)
        self._records[handle.id] = _Record(handle, source, None)
        return handle

    # --- reads --------------------------------------------------------------------------------

    def _get(self, handle: ContentHandle | str) -> _Record:
        handle_id = handle if isinstance(handle, str) else handle.id
        record = self._records.get(handle_id)
        if record is None:
            raise ContentNotFound(f"{self.provider} store holds no content {handle_id!r}")
        return record

    def _expired(self, source: ProviderFileSource) -> bool:
        # A minute of margin: a file that expires while a request is in flight is no good.
        return source.expires_at is not None and source.expires_at - 60.0 <= self.clock()

    def holds(self, handle: ContentHandle | str) -> bool:
        """Whether this store has a live (unexpired) file for the handle; no I/O."""
        handle_id = handle if isinstance(handle, str) else handle.id
        record = self._records.get(handle_id)
        return record is not None and not self._expired(record.source)

    def file_for(self, handle: ContentHandle | str) -> ProviderFileSource | None:
        """The recorded provider file for a handle, expired or not; ``None`` if none."""
        handle_id = handle if isinstance(handle, str) else handle.id
        record = self._records.get(handle_id)
        return record.source if record else None

    async def refresh(self, handle: ContentHandle | str) -> ProviderFileSource:
        """Upload the handle's bytes again from its origin (after expiry or a provider 404).

        :raises ContentNotFound: no origin was kept to upload from.
        """
        record = self._get(handle)
        async with self._lock(record.handle.id):
            if record.origin is None:
                raise ContentNotFound(
                    f"{self.provider} file for {record.handle.id!r} expired and no origin was "
                    "kept to upload it again"
                )
            old = record.source
            fresh = await self._record(record.handle, record.origin, None)
            await self._forget_remote(old)
            return fresh.source

    async def resolve(self, handle: ContentHandle, *,
                      for_provider: str | None = None) -> MediaSource:
        """The provider file for the handle, re-uploaded first if it expired.

        :raises ContentNotFound: unknown handle, or expired with no origin kept.
        """
        record = self._get(handle)
        if self._expired(record.source):
            return await self.refresh(handle)
        return record.source

    async def metadata(self, handle: ContentHandle | str) -> ContentHandle:
        """The full handle recorded here.

        :raises ContentNotFound: unknown handle.
        """
        return self._get(handle).handle

    async def delete(self, handle: ContentHandle | str) -> None:
        """Delete the provider's file and forget the handle.

        :raises ContentNotFound: unknown handle.
        """
        record = self._get(handle)
        del self._records[record.handle.id]
        with contextlib.suppress(ContentNotFound):  # already gone (expired) is fine
            await self._remote_delete(record.source)

    async def fetch_stream(self, handle: ContentHandle) -> AsyncIterator[bytes]:
        """The bytes, from the kept origin or, where the API allows, downloaded.

        :raises ContentNotFound: unknown handle, or the bytes are not retrievable.
        """
        record = self._get(handle)
        if record.origin is not None:
            chunks = record.origin.open()
        elif self.downloadable:
            chunks = self._download(record.source)
        else:
            raise ContentNotFound(
                f"{self.provider} cannot return file bytes and no origin was kept for "
                f"{record.handle.id!r} (pass keep= to keep a copy)"
            )
        async with closing(chunks) as source:
            async for chunk in source:
                yield chunk


def _kind(kind: ContentKind | str | None, mime_type: str) -> ContentKind:
    return ContentKind(kind) if kind else kind_of_mime(mime_type)


def _safe_name(name: str | None, fallback: str) -> str:
    """A file name fit for a header: no path, no control characters."""
    base = os.path.basename(name or "") or fallback
    cleaned = "".join(c for c in base if c.isprintable() and c not in '"\\')
    if not cleaned:
        return fallback
    return cleaned[:200]


def check_size(size: int | None, limit: int, provider: str) -> None:
    """Refuse an upload that is known to exceed the provider's per-file limit.

    :raises ContentRejected: ``size`` is over ``limit``.
    """
    if size is not None and size > limit:
        raise ContentRejected(f"{size} bytes is over {provider}'s {limit}-byte file limit",
                              provider=provider, limit=f"{limit} bytes per file")
