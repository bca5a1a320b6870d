"""Small structured-concurrency helpers shared by the engine, stores and the agent."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import TypeVar

import anyio

__all__ = ["closing", "first_error", "pumped"]

T = TypeVar("T")


@contextlib.asynccontextmanager
async def closing(chunks: AsyncIterable[bytes]) -> AsyncIterator[AsyncIterable[bytes]]:
    """Close an async generator when done, even when cancelled mid-iteration (trio warns)."""
    try:
        yield chunks
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                await aclose()


def first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first plain exception of a (nested) group: callers catch typed errors, not groups."""
    first = group.exceptions[0]
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first


async def pumped(chunks: AsyncIterable[bytes],
                 consume: Callable[[AsyncIterator[bytes]], Awaitable[T]], *,
                 piece: int = 1 << 20, pieces: int = 8) -> T:
    """Run ``consume`` over ``chunks`` read ahead by a separate task.

    Reading and writing overlap: a transfer from one server to another runs at the speed of the
    slower side instead of the sum of both. Small chunks are joined into ``piece``-byte pieces
    and at most ``pieces`` wait, so the read-ahead is bounded in bytes (8 MiB by default).
    Errors from either side surface unwrapped.
    """
    send, receive = anyio.create_memory_object_stream[bytes](pieces)

    async def pump() -> None:
        async with send, closing(chunks) as source:
            pending = bytearray()
            async for chunk in source:
                if not pending and len(chunk) >= piece:
                    await send.send(chunk)
                    continue
                pending += chunk
                if len(pending) >= piece:
                    await send.send(bytes(pending))
                    pending.clear()
            if pending:
                await send.send(bytes(pending))

    async def drain() -> AsyncIterator[bytes]:
        async for chunk in receive:
            yield chunk

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            async with receive:
                result = await consume(drain())
    except BaseExceptionGroup as group:
        raise first_error(group) from None
    return result
