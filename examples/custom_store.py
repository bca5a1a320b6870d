"""A user-defined content store: content in one SQLite file, streamed in fixed-size rows.

Subclass ``plait.ContentStore`` and implement ``put``, ``resolve``, ``metadata``, ``delete`` and
*one* of ``fetch_stream`` / ``fetch_bytes``: the base class derives the other. This store
implements ``fetch_stream`` (one row per chunk, so a large item is never loaded whole) and
inherits ``fetch_bytes``. Everything it raises is a plait exception (``ContentNotFound``,
``ContentError``), so tools and the resolver treat it like the built-in stores.

Run it: ``python examples/custom_store.py``
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import threading
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import anyio
import anyio.to_thread

from plait import (
    Body,
    ContentError,
    ContentHandle,
    ContentKind,
    ContentNotFound,
    ContentStore,
    InlineSource,
    MediaSource,
    detect_kind,
    detect_mime_type,
)

CHUNK = 256 * 1024


class SQLiteStore(ContentStore):
    """Content in a SQLite database: one metadata row and N data rows per item."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._db = sqlite3.connect(os.fspath(path), check_same_thread=False)
        self._lock = threading.Lock()  # one connection, used from worker threads
        with self._db:
            self._db.execute("CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY, meta TEXT)")
            self._db.execute("CREATE TABLE IF NOT EXISTS chunks (id TEXT, seq INTEGER, "
                             "data BLOB, PRIMARY KEY (id, seq))")

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    async def _sql(self, query: str, *args: Any) -> list[Any]:
        def run() -> list[Any]:
            with self._lock, self._db:
                return self._db.execute(query, args).fetchall()

        return await anyio.to_thread.run_sync(run)

    async def put(self, body: Body, *, kind: ContentKind | str | None = None,
                  mime_type: str | None = None,
                  display_name: str | None = None) -> ContentHandle:
        """Store bytes or an async iterable of bytes, one row per ``CHUNK``."""
        if isinstance(body, bytes):
            source: AsyncIterable[bytes] = _once(body)
        elif isinstance(body, AsyncIterable):
            source = body
        else:
            raise ContentError("SQLiteStore takes bytes or an async iterable of bytes")
        handle_id = "sq_" + secrets.token_urlsafe(16)  # 128 random bits: unguessable
        head, size, seq, buffer = b"", 0, 0, bytearray()
        async for piece in source:
            head = head or piece[:4096]
            size += len(piece)
            buffer += piece
            while len(buffer) >= CHUNK:
                await self._sql("INSERT INTO chunks VALUES (?, ?, ?)", handle_id, seq,
                                bytes(buffer[:CHUNK]))
                del buffer[:CHUNK]
                seq += 1
        if buffer:
            await self._sql("INSERT INTO chunks VALUES (?, ?, ?)", handle_id, seq,
                            bytes(buffer))
        mime = mime_type or detect_mime_type(head, name=display_name)
        handle = ContentHandle(handle_id, kind or detect_kind(head, mime_type=mime),
                               mime_type=mime, byte_size=size, display_name=display_name)
        meta = f"{handle.kind.value}\n{mime or ''}\n{size}\n{display_name or ''}"
        await self._sql("INSERT INTO items VALUES (?, ?)", handle_id, meta)
        return handle

    async def metadata(self, handle: ContentHandle | str) -> ContentHandle:
        """The stored handle; ``ContentNotFound`` when the id is unknown."""
        handle_id = handle if isinstance(handle, str) else handle.id
        rows = await self._sql("SELECT meta FROM items WHERE id = ?", handle_id)
        if not rows:
            raise ContentNotFound(f"no content {handle_id!r} in this SQLite store")
        kind, mime, size, name = rows[0][0].split("\n", 3)
        return ContentHandle(handle_id, kind, mime_type=mime or None, byte_size=int(size),
                             display_name=name or None)

    async def resolve(self, handle: ContentHandle, *,
                      for_provider: str | None = None) -> MediaSource:
        """Inline bytes (``fetch_bytes`` is inherited: it joins ``fetch_stream``)."""
        meta = await self.metadata(handle)
        data = await self.fetch_bytes(meta)
        return InlineSource(data=data, mime_type=meta.mime_type or "application/octet-stream")

    async def delete(self, handle: ContentHandle | str) -> None:
        """Remove the item and its rows."""
        meta = await self.metadata(handle)
        await self._sql("DELETE FROM chunks WHERE id = ?", meta.id)
        await self._sql("DELETE FROM items WHERE id = ?", meta.id)

    async def fetch_stream(self, handle: ContentHandle) -> AsyncIterator[bytes]:
        """One row at a time: memory stays at one chunk however large the item."""
        meta = await self.metadata(handle)
        seq = 0
        while rows := await self._sql("SELECT data FROM chunks WHERE id = ? AND seq = ?",
                                      meta.id, seq):
            yield bytes(rows[0][0])
            seq += 1


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def main() -> None:
    """Store a picture, stream it back, and let a tool read it through the resolver."""
    import tempfile

    from plait import Context, ImageInput, ToolCall, invoke_tool, tool

    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(os.path.join(tmp, "content.db"))
        png = b"\x89PNG\r\n\x1a\n" + os.urandom(600_000)
        handle = await store.put(png, display_name="big.png")
        print(handle)
        print("chunks:", [len(c) async for c in store.fetch_stream(handle)])

        @tool
        async def image_size(image: ImageInput) -> int:
            """Size of an image in bytes."""
            return len(await image.read())

        ctx = Context(run_id="demo", store=store)
        ctx.handles.add(handle)
        call = ToolCall("call-1", "image_size", f'{{"image": "{handle.id}"}}')
        print("tool says:", (await invoke_tool(image_size, call, ctx)).data)
        store.close()


if __name__ == "__main__":
    anyio.run(main)
