"""Strict validation helpers over the official SDK types (WIRE.md §9).

The openai and anthropic TypedDict adapters validate ``Iterable`` fields lazily: a bad nested
part passes until it is iterated, so ``materialize`` walks everything. Adapters are module-level
so they outlive every iterator they hand out (a collected adapter crashed pydantic-core).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def materialize(value: Any) -> Any:
    """Recursively turn every lazy iterable into a list (forcing its validation)."""
    if isinstance(value, str | bytes | bytearray):
        return value
    if isinstance(value, Mapping):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, Iterable):
        return [materialize(v) for v in value]
    return value


def run_sync(coro: Any) -> Any:
    """Run a coroutine that never really suspends (parsers over in-memory chunks)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise AssertionError("coroutine suspended: it is not a pure parser")


async def _collect(agen: Any) -> list[Any]:
    return [item async for item in agen]


def collect(agen: Any) -> list[Any]:
    """All items of an async generator that never suspends."""
    return run_sync(_collect(agen))  # type: ignore[no-any-return]


async def aiter_chunks(chunks: list[bytes]) -> Any:
    for chunk in chunks:
        yield chunk


def every_split(data: bytes) -> Iterable[list[bytes]]:
    """``data`` cut in two at every byte boundary, then one byte at a time."""
    for i in range(len(data) + 1):
        yield [data[:i], data[i:]]
    yield [data[i:i + 1] for i in range(len(data))]
