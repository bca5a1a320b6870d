"""``LocalFileStore``: content in files under one root directory.

Layout: ``<root>/<id>.data`` holds the bytes and ``<root>/<id>.meta.json`` the handle beside it;
partial writes live in ``<root>/.tmp/`` until they are complete. A write is atomic (temp file,
fsync, rename, then the metadata the same way), so a crash leaves either the whole item or none
of it, and a new store over the same root sees everything a previous process stored.

Ids are checked before they become paths: only ``[A-Za-z0-9_-]`` is allowed, so traversal
(``../x``), absolute paths and encoded separators (``%2F``) are refused, and files are opened
with ``O_NOFOLLOW`` so a symlink planted under the root cannot lead outside it.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
from collections.abc import AsyncIterator
from typing import BinaryIO

import anyio.to_thread
import msgspec

from plait import (
    Body,
    ContentError,
    ContentHandle,
    ContentKind,
    ContentNotFound,
    ContentStore,
    InvalidHandleId,
    LocalPathSource,
    MediaSource,
)
from plait._content import new_handle_id

from ._body import HeadCapture, describe, open_body
from ._readahead import DEFAULT_CHUNK_SIZE, iter_file

__all__ = ["LocalFileStore"]

_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,128}")
_DATA = ".data"
_META = ".meta.json"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_meta_decoder = msgspec.json.Decoder(ContentHandle)


def _check_id(handle: ContentHandle | str) -> str:
    handle_id = handle if isinstance(handle, str) else handle.id
    if not isinstance(handle_id, str) or not _ID_RE.fullmatch(handle_id):
        shown = repr(handle_id)[:80]
        raise InvalidHandleId(
            f"invalid content handle id {shown}: ids are 1-128 characters of [A-Za-z0-9_-]"
        )
    return handle_id


def _create(path: str) -> BinaryIO:
    return open(path, "xb", buffering=0)


class LocalFileStore(ContentStore):
    """A content store in a directory; streams from disk, resolves to local paths.

    ``fsync=False`` skips the flushes to disk (faster, still atomic against concurrent readers,
    not against power loss).
    """

    def __init__(self, root: str | os.PathLike[str], *, chunk_size: int = DEFAULT_CHUNK_SIZE,
                 fsync: bool = True) -> None:
        self.root = os.path.realpath(os.fspath(root))
        self._tmp = os.path.join(self.root, ".tmp")
        os.makedirs(self._tmp, exist_ok=True)
        self._chunk_size = chunk_size
        self._fsync = fsync

    def __repr__(self) -> str:
        return f"LocalFileStore({self.root!r})"

    # --- paths and low-level file access (blocking; called in worker threads) -----------------

    def _path(self, handle: ContentHandle | str, suffix: str) -> str:
        path = os.path.join(self.root, _check_id(handle) + suffix)
        if os.path.dirname(path) != self.root:  # belt and braces: the regex already ensures it
            raise InvalidHandleId("content handle id escapes the store root")
        return path

    def _open(self, path: str, handle_id: str) -> BinaryIO:
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
        except FileNotFoundError:
            raise ContentNotFound(f"no content {handle_id!r} in {self!r}") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InvalidHandleId(
                    f"content {handle_id!r} is a symbolic link; refusing to follow it"
                ) from None
            raise ContentError(f"cannot open content {handle_id!r}: {exc.strerror}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise InvalidHandleId(f"content {handle_id!r} is not a regular file")
        return os.fdopen(fd, "rb", buffering=0)

    def _read_meta(self, handle: ContentHandle | str) -> ContentHandle:
        handle_id = _check_id(handle)
        with self._open(self._path(handle_id, _META), handle_id) as file:
            raw = file.read()
        try:
            meta = _meta_decoder.decode(raw)
        except (msgspec.DecodeError, ValueError):
            raise ContentError(f"metadata of content {handle_id!r} is corrupt") from None
        if meta.id != handle_id:
            raise ContentError(f"metadata of content {handle_id!r} names another id")
        return meta

    def _write_atomic(self, tmp: str, final: str) -> None:
        if self._fsync:
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        os.replace(tmp, final)

    def _sync_dir(self) -> None:
        if self._fsync:
            fd = os.open(self.root, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def _commit(self, tmp_data: str, handle: ContentHandle) -> None:
        self._write_atomic(tmp_data, self._path(handle.id, _DATA))
        tmp_meta = tmp_data + ".meta"
        with open(tmp_meta, "xb") as file:
            file.write(msgspec.json.encode(handle))
        self._write_atomic(tmp_meta, self._path(handle.id, _META))
        self._sync_dir()

    # --- the store interface ---------------------------------------------------------------------

    async def put(self, body: Body, *, kind: ContentKind | str | None = None,
                  mime_type: str | None = None,
                  display_name: str | None = None) -> ContentHandle:
        """Stream ``body`` into a new file and return its handle.

        :raises ContentError: the body cannot be read or written, or ``kind`` is invalid.
        """
        handle_id = new_handle_id()
        tmp = os.path.join(self._tmp, f"{handle_id}.{secrets.token_hex(4)}.part")
        capture = HeadCapture()
        try:
            file = await anyio.to_thread.run_sync(_create, tmp)
            try:
                async with open_body(body, chunk_size=self._chunk_size) as reader:
                    pending: list[bytes] = []
                    pending_size = 0
                    async for chunk in reader.chunks:
                        capture.feed(chunk)
                        pending.append(chunk)
                        pending_size += len(chunk)
                        if pending_size >= self._chunk_size:  # coalesce small chunks
                            await anyio.to_thread.run_sync(file.writelines, pending)
                            pending, pending_size = [], 0
                    if pending:
                        await anyio.to_thread.run_sync(file.writelines, pending)
            finally:
                file.close()
            handle = describe(handle_id, capture, reader, kind=kind, mime_type=mime_type,
                              display_name=display_name)
            await anyio.to_thread.run_sync(self._commit, tmp, handle)
        except OSError as exc:
            raise ContentError(f"cannot write content to {self!r}: {exc.strerror}") from None
        finally:
            for leftover in (tmp, tmp + ".meta"):
                if os.path.lexists(leftover):
                    os.unlink(leftover)
        return handle

    async def resolve(self, handle: ContentHandle, *,
                      for_provider: str | None = None) -> MediaSource:
        """The content's file as a local-path source.

        :raises ContentNotFound: the handle names nothing here.
        :raises InvalidHandleId: the id is malformed or hostile.
        """
        meta = await self.metadata(handle)
        return LocalPathSource(path=self._path(meta.id, _DATA), mime_type=meta.mime_type)

    async def metadata(self, handle: ContentHandle | str) -> ContentHandle:
        """The stored handle, read from the metadata file.

        :raises ContentNotFound: the handle names nothing here.
        :raises InvalidHandleId: the id is malformed or hostile.
        """
        _check_id(handle)
        return await anyio.to_thread.run_sync(self._read_meta, handle)

    async def delete(self, handle: ContentHandle | str) -> None:
        """Remove the metadata, then the data.

        :raises ContentNotFound: the handle names nothing here.
        :raises InvalidHandleId: the id is malformed or hostile.
        """
        handle_id = _check_id(handle)

        def remove() -> None:
            self._read_meta(handle_id)  # existence and symlink checks
            for suffix in (_META, _DATA):
                path = self._path(handle_id, suffix)
                if os.path.lexists(path):
                    os.unlink(path)  # unlinks a symlink itself, never its target
            self._sync_dir()

        await anyio.to_thread.run_sync(remove)

    async def fetch_stream(self, handle: ContentHandle) -> AsyncIterator[bytes]:
        """Stream the file in chunks, read ahead in a worker thread.

        :raises ContentNotFound: the handle names nothing here.
        :raises InvalidHandleId: the id is malformed or hostile.
        """
        handle_id = _check_id(handle)
        file = await anyio.to_thread.run_sync(self._open, self._path(handle_id, _DATA),
                                              handle_id)
        chunks = iter_file(file, chunk_size=self._chunk_size)
        try:
            async for chunk in chunks:
                yield chunk
        finally:
            await chunks.aclose()

    async def fetch_bytes(self, handle: ContentHandle) -> bytes:
        """Read the whole file in one worker-thread call.

        :raises ContentNotFound: the handle names nothing here.
        :raises InvalidHandleId: the id is malformed or hostile.
        """
        handle_id = _check_id(handle)

        def read() -> bytes:
            with self._open(self._path(handle_id, _DATA), handle_id) as file:
                return file.read()

        return await anyio.to_thread.run_sync(read)
