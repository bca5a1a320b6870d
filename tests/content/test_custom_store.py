"""The documented user-defined store in examples/custom_store.py works like a built-in one."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from plait import (
    ContentError,
    ContentKind,
    ContentNotFound,
    Context,
    ImageInput,
    InlineSource,
    ToolCall,
    invoke_tool,
    tool,
)

from .conftest import PNG

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom_store.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("plait_example_custom_store", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


example = _load()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Any]:
    sqlite_store = example.SQLiteStore(tmp_path / "c.db")
    yield sqlite_store
    sqlite_store.close()


async def test_round_trip_and_derived_fetch_bytes(store: Any) -> None:
    data = PNG + os.urandom(600_000)
    handle = await store.put(data, display_name="big.png")
    assert handle.kind is ContentKind.IMAGE and handle.byte_size == len(data)
    # fetch_stream is the store's own; fetch_bytes is derived by the base class.
    assert "fetch_bytes" not in vars(example.SQLiteStore)
    sizes = [len(chunk) async for chunk in store.fetch_stream(handle)]
    assert sizes == [example.CHUNK, example.CHUNK, len(data) - 2 * example.CHUNK]
    assert await store.fetch_bytes(handle) == data
    assert await store.metadata(handle.id) == handle
    source = await store.resolve(handle)
    assert isinstance(source, InlineSource) and source.data == data


async def test_streamed_put_and_errors(store: Any) -> None:
    async def pieces() -> AsyncIterator[bytes]:
        for _ in range(10):
            yield b"0123456789" * 1000

    handle = await store.put(pieces(), kind="data")
    assert handle.kind is ContentKind.DATA and handle.byte_size == 100_000
    await store.delete(handle)
    with pytest.raises(ContentNotFound):
        await store.fetch_bytes(handle)
    with pytest.raises(ContentError):
        await store.put("/some/path")


async def test_tools_read_through_the_custom_store(store: Any) -> None:
    handle = await store.put(PNG)

    @tool
    async def size_of(image: ImageInput) -> int:
        return len(await image.read())

    ctx = Context(run_id="r", store=store)
    ctx.handles.add(handle)
    invocation = await invoke_tool(size_of, ToolCall("c", "size_of",
                                                     json.dumps({"image": handle.id})), ctx)
    assert invocation.data == len(PNG)
