"""Chunked file reads for async code, with a reader thread that keeps a few chunks ahead.

A worker-thread hop per chunk (``anyio.to_thread.run_sync(f.read, n)``) costs about as much as
reading a megabyte from the page cache, so a plain async read loop runs at roughly half the speed
of a synchronous one. Here one thread reads ahead into a small bounded queue: the event loop is
only woken when the consumer is actually waiting (and then once per half-queue batch, as is the
reader when the queue drains), reads overlap with whatever the consumer does, and memory stays
bounded by ``depth * chunk_size``. asyncio and trio are woken through their own non-blocking
thread-safe calls; any other anyio backend through ``anyio.from_thread``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import threading
from collections.abc import Callable
from typing import BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

__all__ = ["DEFAULT_CHUNK_SIZE", "FileChunks", "iter_file"]

DEFAULT_CHUNK_SIZE = 1 << 20
"""Bytes per chunk when streaming files: large enough to amortise a thread hop."""


def _thread_safe_caller() -> Callable[[Callable[[], object]], None]:
    """A non-blocking way for a thread to schedule a callback on the current event loop.

    asyncio and trio each have one (``call_soon_threadsafe``, ``run_sync_soon``) that does not
    wait for the loop, so the reader thread goes straight back to reading. Anything else gets
    anyio's blocking ``from_thread.run_sync``.
    """
    token = anyio.lowlevel.current_token()
    native = token.native_token
    if isinstance(native, asyncio.AbstractEventLoop):
        loop = native

        def call_soon(fn: Callable[[], object]) -> None:
            loop.call_soon_threadsafe(fn)

        return call_soon
    run_sync_soon = getattr(native, "run_sync_soon", None)  # trio.lowlevel.TrioToken
    if callable(run_sync_soon):
        return run_sync_soon  # type: ignore[no-any-return]

    def blocking(fn: Callable[[], object]) -> None:
        anyio.from_thread.run_sync(fn, token=token)

    return blocking


class _ReadAhead:
    """State shared between the reader thread and the consuming task, guarded by ``_cond``."""

    def __init__(self, file: BinaryIO, chunk_size: int, depth: int) -> None:
        self._file = file
        self._chunk_size = chunk_size
        self._depth = depth
        self._wake_at = max(1, depth // 2)  # chunks queued before a waiting consumer wakes
        self._resume_at = depth // 2  # queue length at which a blocked reader resumes
        self._cond = threading.Condition()
        self._chunks: collections.deque[bytes] = collections.deque()
        self._done = False
        self._closed = False
        self._error: BaseException | None = None
        self._waiter: anyio.Event | None = None
        self._call_soon = _thread_safe_caller()

    def run(self) -> None:
        """Reader thread body: read until EOF, an error, or the consumer closes."""
        try:
            while True:
                with self._cond:
                    while len(self._chunks) >= self._depth and not self._closed:
                        self._cond.wait()
                    if self._closed:
                        return
                data = self._file.read(self._chunk_size)
                with self._cond:
                    if data:
                        self._chunks.append(data)
                    else:
                        self._done = True
                    # Wake a waiting consumer once a batch is ready (or at EOF): one loop
                    # wake-up per batch instead of per chunk.
                    waiter = None
                    if not data or len(self._chunks) >= self._wake_at:
                        waiter, self._waiter = self._waiter, None
                self._wake(waiter)
                if not data:
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which re-raises it
            with self._cond:
                self._error = exc
                self._done = True
                waiter, self._waiter = self._waiter, None
            self._wake(waiter)
        finally:
            self._file.close()

    def _wake(self, waiter: anyio.Event | None) -> None:
        if waiter is None:
            return
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            self._call_soon(waiter.set)

    async def next_chunk(self) -> bytes | None:
        """The next chunk, or ``None`` at EOF; re-raises the reader's error."""
        while True:
            with self._cond:
                if self._chunks:
                    chunk = self._chunks.popleft()
                    # Hysteresis: a reader blocked on a full queue resumes once it is half
                    # empty, so the two threads trade places once per batch, not per chunk.
                    if len(self._chunks) <= self._resume_at:
                        self._cond.notify()
                    return chunk
                if self._error is not None:
                    raise self._error
                if self._done:
                    return None
                waiter = self._waiter = anyio.Event()
            await waiter.wait()

    def close(self) -> None:
        """Stop the reader thread; it closes the file."""
        with self._cond:
            self._closed = True
            self._chunks.clear()
            self._cond.notify_all()


class FileChunks:
    """An async iterator over a file's chunks that owns the file from construction on.

    ``aclose()`` releases the file whether or not iteration ever started, so a body that is
    opened and then abandoned does not leak a descriptor.
    """

    def __init__(self, file: BinaryIO, *, chunk_size: int = DEFAULT_CHUNK_SIZE,
                 depth: int = 8) -> None:
        self._file = file
        self._chunk_size = chunk_size
        self._depth = depth
        self._reader: _ReadAhead | None = None
        self._small = False
        self._finished = False
        try:
            size = os.fstat(file.fileno()).st_size
        except (OSError, ValueError):
            size = -1
        self._small = 0 <= size <= chunk_size

    def __aiter__(self) -> FileChunks:
        return self

    async def __anext__(self) -> bytes:
        if self._finished:
            raise StopAsyncIteration
        if self._small:  # one worker-thread call; no reader thread for a single chunk
            self._finished = True
            try:
                data = await anyio.to_thread.run_sync(self._file.read)
            finally:
                self._file.close()
            if not data:
                raise StopAsyncIteration
            return bytes(data)
        if self._reader is None:
            self._reader = _ReadAhead(self._file, self._chunk_size, self._depth)
            threading.Thread(target=self._reader.run, name="plait-readahead",
                             daemon=True).start()
        try:
            chunk = await self._reader.next_chunk()
        except BaseException:
            await self.aclose()
            raise
        if chunk is None:
            await self.aclose()
            raise StopAsyncIteration
        return chunk

    async def aclose(self) -> None:
        """Stop reading and release the file (the reader thread closes it if it runs)."""
        self._finished = True
        if self._reader is not None:
            self._reader.close()
        else:
            self._file.close()


def iter_file(file: BinaryIO, *, chunk_size: int = DEFAULT_CHUNK_SIZE,
              depth: int = 8) -> FileChunks:
    """Stream ``file``'s bytes in chunks of ``chunk_size``; takes ownership of and closes it."""
    return FileChunks(file, chunk_size=chunk_size, depth=depth)
