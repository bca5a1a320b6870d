"""A content store in S3-compatible object storage (S3, SeaweedFS, MinIO, R2...) on ``obstore``.

Bytes never sit in memory whole: uploads are multipart, fed chunk by chunk from the caller's
stream; reads stream ranges of the object. Kind, MIME type and display name travel as object
metadata, so any process that can reach the bucket can rebuild a handle from its id alone.

Every obstore call runs in a worker thread through obstore's *synchronous* API. Its asyncio
API cannot run under trio, and with async streaming it has been seen to abort the interpreter at
exit; a thread hop per multi-megabyte chunk costs nothing measurable next to the network.
"""

from __future__ import annotations

import datetime
import functools
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, unquote

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from plait import (
    ContentError,
    ContentHandle,
    ContentKind,
    ContentNotFound,
    ContentStore,
    InvalidHandleId,
    MediaSource,
    UrlSource,
)
from plait._content import new_handle_id
from plait._store import Body

from ._body import HeadCapture, describe, open_body

if TYPE_CHECKING:
    from obstore.store import ObjectStore

__all__ = ["S3Store"]

T = TypeVar("T")

_ID = re.compile(r"h_[a-z2-7]{26}")
_KIND_KEY = "plait-kind"
_NAME_KEY = "plait-name"
_MiB = 1024 * 1024


class S3Store(ContentStore):
    """Content in a bucket (under ``prefix``), reachable by presigned URLs.

    Credentials are taken from the arguments or, when omitted, from the usual ``AWS_*``
    environment variables (obstore's rules). ``client`` replaces the built-in S3 client with any
    obstore store (GCS, Azure, another S3 configuration); ``bucket`` is then only a label.
    ``url_expiry`` is how long a presigned URL from ``resolve`` stays valid; ``part_size`` and
    ``max_concurrency`` shape multipart uploads (memory in flight is about their product), and
    reads yield chunks of at most ``read_chunk_size`` bytes.
    """

    def __init__(self, bucket: str, *, prefix: str = "", endpoint: str | None = None,
                 region: str | None = None, access_key_id: str | None = None,
                 secret_access_key: str | None = None, session_token: str | None = None,
                 allow_http: bool | None = None,
                 url_expiry: datetime.timedelta = datetime.timedelta(hours=1),
                 part_size: int = 8 * _MiB, max_concurrency: int = 4,
                 read_chunk_size: int = 4 * _MiB, client: ObjectStore | None = None) -> None:
        if part_size < 5 * _MiB:
            raise ValueError("part_size must be at least 5 MiB (S3's smallest multipart part)")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        self.bucket = bucket
        self.prefix = prefix
        self.url_expiry = url_expiry
        self._part_size = part_size
        self._max_concurrency = max_concurrency
        self._read_chunk_size = read_chunk_size
        if client is None:
            client = _s3_client(bucket, endpoint=endpoint, region=region,
                                access_key_id=access_key_id,
                                secret_access_key=secret_access_key,
                                session_token=session_token, allow_http=allow_http)
        self._client = client

    def __repr__(self) -> str:  # never the credentials
        return f"S3Store(bucket={self.bucket!r}, prefix={self.prefix!r})"

    # --- writing --------------------------------------------------------------------------------

    async def put(self, body: Body, *, kind: ContentKind | str | None = None,
                  mime_type: str | None = None,
                  display_name: str | None = None) -> ContentHandle:
        """Upload ``body`` (multipart, streamed) and return its handle.

        :raises ContentError: the body cannot be read, or the upload failed (nothing is stored).
        """
        import obstore

        handle_id = new_handle_id()
        capture = HeadCapture()
        async with open_body(body) as reader, _closing(reader.chunks):
            # Metadata goes out with the object, but detection needs the first bytes: pull
            # them before the upload starts, then replay them as the first chunk.
            first = await _first_chunk(reader.chunks)
            capture.feed(first)
            handle = describe(handle_id, capture, reader, kind=kind, mime_type=mime_type,
                              display_name=display_name)
            feeder = _Feeder(first, reader.chunks, capture, anyio.lowlevel.current_token())
            attributes = {_KIND_KEY: handle.kind.value}
            if handle.mime_type:
                attributes["Content-Type"] = handle.mime_type
            if handle.display_name:
                attributes[_NAME_KEY] = quote(handle.display_name, safe="")
            upload = functools.partial(
                obstore.put, self._client, self._key(handle_id), feeder,
                attributes=attributes, use_multipart=True, chunk_size=self._part_size,
                max_concurrency=self._max_concurrency,
            )
            await _run_feeding(upload, feeder, handle_id)
        return ContentHandle(handle_id, handle.kind, mime_type=handle.mime_type,
                             byte_size=capture.size, display_name=handle.display_name)

    async def delete(self, handle: ContentHandle | str) -> None:
        """Remove the object.

        :raises ContentNotFound: nothing is stored under this id.
        :raises InvalidHandleId: the id is malformed.
        """
        import obstore

        handle_id = _check_id(handle)
        await self._head(handle_id)  # S3 deletes of missing keys succeed silently
        await _call(obstore.delete, self._client, self._key(handle_id), handle_id=handle_id,
                    op="delete")

    # --- reading --------------------------------------------------------------------------------

    async def metadata(self, handle: ContentHandle | str) -> ContentHandle:
        """Rebuild the full handle from the object's metadata.

        :raises ContentNotFound: nothing is stored under this id.
        :raises InvalidHandleId: the id is malformed.
        """
        handle_id = _check_id(handle)
        size, attributes = await self._head(handle_id)
        try:
            kind = ContentKind(attributes.get(_KIND_KEY, ContentKind.OTHER.value))
        except ValueError:
            kind = ContentKind.OTHER
        name = attributes.get(_NAME_KEY)
        return ContentHandle(handle_id, kind, mime_type=attributes.get("Content-Type"),
                             byte_size=size, display_name=unquote(name) if name else None)

    async def resolve(self, handle: ContentHandle, *,
                      for_provider: str | None = None) -> MediaSource:
        """A presigned GET URL valid for ``url_expiry`` (any provider that fetches URLs).

        :raises ContentNotFound: nothing is stored under this id.
        """
        import obstore

        meta = await self.metadata(handle)
        url = await _call(obstore.sign, self._client, "GET", self._key(meta.id),
                          self.url_expiry, handle_id=meta.id, op="sign")
        return UrlSource(url=str(url), mime_type=meta.mime_type)

    async def fetch_stream(self, handle: ContentHandle, *, offset: int = 0,
                           length: int | None = None) -> AsyncIterator[bytes]:
        """Stream the object, or ``length`` bytes of it from ``offset``, in chunks of at most
        ``read_chunk_size`` bytes.

        :raises ContentNotFound: nothing is stored under this id.
        :raises ContentError: the range lies outside the object, or the read failed.
        """
        import obstore

        handle_id = _check_id(handle)
        if offset < 0 or (length is not None and length < 0):
            raise ContentError("offset and length must not be negative")
        if length == 0:
            return
        options: dict[str, Any] = {}
        if length is not None:
            options["range"] = (offset, offset + length)
        elif offset:
            options["range"] = {"offset": offset}
        result = await _call(obstore.get, self._client, self._key(handle_id),
                             options=options or None, handle_id=handle_id, op="read")
        size = self._read_chunk_size
        # obstore joins network chunks until at least min_chunk_size: aim a little below the
        # bound so that chunks rarely exceed it and need splitting (a copy).
        coalesce = size - 64 * 1024 if size > 128 * 1024 else size
        chunks = iter(result.stream(min_chunk_size=coalesce))
        while True:
            chunk = await _call(next, chunks, None, handle_id=handle_id, op="read")
            if chunk is None:
                return
            if len(chunk) <= size:
                yield bytes(chunk)
                continue
            for start in range(0, len(chunk), size):  # network chunks can be larger
                yield bytes(chunk[start:start + size])

    # --- internals ------------------------------------------------------------------------------

    def _key(self, handle_id: str) -> str:
        return self.prefix + handle_id

    async def _head(self, handle_id: str) -> tuple[int, dict[str, str]]:
        import obstore

        result = await _call(obstore.get, self._client, self._key(handle_id),
                             options={"head": True}, handle_id=handle_id, op="metadata")
        attributes = {k: str(v) for k, v in result.attributes.items()}
        return int(result.meta["size"]), attributes


def _s3_client(bucket: str, *, endpoint: str | None, region: str | None,
               access_key_id: str | None, secret_access_key: str | None,
               session_token: str | None, allow_http: bool | None) -> ObjectStore:
    try:
        from obstore.store import S3Store as ObstoreS3
    except ImportError:  # pragma: no cover - depends on the installed extras
        raise ContentError("S3Store needs obstore: pip install 'plait[s3]'") from None
    config: dict[str, Any] = {}
    if endpoint is not None:
        config["endpoint"] = endpoint
        if allow_http is None:
            allow_http = endpoint.startswith("http://")
    for key, value in (("region", region), ("access_key_id", access_key_id),
                       ("secret_access_key", secret_access_key),
                       ("session_token", session_token)):
        if value is not None:
            config[key] = value
    client_options = {"allow_http": True} if allow_http else None
    return ObstoreS3(bucket, client_options=client_options, **config)  # type: ignore[arg-type]


def _check_id(handle: ContentHandle | str) -> str:
    handle_id = handle.id if isinstance(handle, ContentHandle) else handle
    if not isinstance(handle_id, str) or _ID.fullmatch(handle_id) is None:
        raise InvalidHandleId(f"not a content handle id: {str(handle_id)[:40]!r}")
    return handle_id


def _translate(exc: BaseException, handle_id: str, op: str) -> ContentError:
    """Map an obstore failure onto plait's errors; the message names no credentials."""
    import obstore.exceptions as oe

    if isinstance(exc, (FileNotFoundError, oe.NotFoundError)):
        return ContentNotFound(f"no content {handle_id!r} in this store")
    if isinstance(exc, (oe.PermissionDeniedError, oe.UnauthenticatedError)):
        return ContentError(f"S3 {op} of {handle_id!r} was refused: check the credentials")
    detail = str(exc).splitlines()[0][:200] if str(exc) else ""
    return ContentError(f"S3 {op} of {handle_id!r} failed: {type(exc).__name__}: {detail}")


async def _call(fn: Callable[..., T], *args: Any, handle_id: str, op: str,
                **kwargs: Any) -> T:
    """Run a blocking obstore call in a worker thread, translating its errors."""
    try:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
    except ContentError:
        raise
    except Exception as exc:
        raise _translate(exc, handle_id, op) from exc


@asynccontextmanager
async def _closing(chunks: AsyncIterator[bytes]) -> AsyncIterator[None]:
    """Close the body's chunk generator however the upload ends (trio warns otherwise)."""
    try:
        yield
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


async def _first_chunk(chunks: AsyncIterator[bytes]) -> bytes:
    async for chunk in chunks:
        return chunk
    return b""


class _BodyFailed(Exception):
    """Raised inside obstore's upload loop so that it aborts; carries the body's own error."""


class _Feeder(Iterator[bytes]):
    """A blocking iterator over an async body, for obstore's upload loop in a worker thread.

    Each ``next`` hops back to the event loop for one chunk. ``stop()`` (on cancellation) makes
    the next pull fail, so obstore aborts the multipart upload instead of draining the body.
    """

    def __init__(self, first: bytes, chunks: AsyncIterator[bytes], capture: HeadCapture,
                 token: anyio.lowlevel.EventLoopToken) -> None:
        self._first: bytes | None = first or None
        self._chunks = chunks
        self._capture = capture
        self._token = token
        self._stopped = threading.Event()
        self.error: BaseException | None = None

    def stop(self) -> None:
        self._stopped.set()

    def __next__(self) -> bytes:
        if self._stopped.is_set():
            raise _BodyFailed("upload cancelled")
        if self._first is not None:
            first, self._first = self._first, None
            return first
        try:
            chunk = anyio.from_thread.run(self._pull, token=self._token)
        except BaseException as exc:  # noqa: BLE001 - re-raised by put() on the event loop
            self.error = exc
            raise _BodyFailed("the body could not be read") from None
        if chunk is None:
            raise StopIteration
        return chunk

    async def _pull(self) -> bytes | None:
        async for chunk in self._chunks:
            if chunk:
                self._capture.feed(chunk)
                return chunk
        return None


async def _run_feeding(upload: Callable[[], object], feeder: _Feeder, handle_id: str) -> None:
    """Run ``upload`` in a thread; on cancellation stop feeding it and wait for the abort."""
    done = anyio.Event()
    token = anyio.lowlevel.current_token()
    outcome: list[BaseException] = []

    def work() -> None:
        try:
            upload()
        except BaseException as exc:  # noqa: BLE001 - handed back to the event loop below
            outcome.append(exc)
        finally:
            anyio.from_thread.run_sync(done.set, token=token)

    try:
        await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        feeder.stop()
        with anyio.CancelScope(shield=True):
            await done.wait()
        raise
    await done.wait()
    if feeder.error is not None:
        if isinstance(feeder.error, ContentError):
            raise feeder.error
        raise ContentError("the body could not be read; nothing was stored") from feeder.error
    if outcome:
        raise _translate(outcome[0], handle_id, "upload") from outcome[0]

