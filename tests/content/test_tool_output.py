"""ToolOutput normalisation and invoke_tool's handling of failures, timeouts and media."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from pydantic import BaseModel

from plait import (
    Audio,
    ContentKind,
    Context,
    Document,
    Image,
    ImageInput,
    ProviderRaw,
    Text,
    ToolCall,
    ToolOutput,
    ToolOutputError,
    ToolTimeout,
    Video,
    invoke_tool,
    provider_raw,
    tool,
)
from plait.stores import MemoryStore

from .conftest import MP3, PNG


class Reading(BaseModel):
    value: float
    unit: str


class Point(msgspec.Struct):
    x: int
    y: int


@dataclasses.dataclass
class Box:
    w: int


async def _run(fn: Any, arguments: str = "{}", ctx: Context | None = None,
               **options: Any) -> Any:
    ctx = ctx or Context(run_id="r", store=MemoryStore())
    return await invoke_tool(tool(fn), ToolCall("call-7", fn.__name__, arguments), ctx,
                             **options)


@pytest.mark.parametrize(("value", "expected"), [
    ("plain text", [Text("plain text")]),
    ({"a": 1, "b": [True, None]}, [Text('{"a":1,"b":[true,null]}')]),
    (Reading(value=1.5, unit="V"), [Text('{"value":1.5,"unit":"V"}')]),
    (Point(1, 2), [Text('{"x":1,"y":2}')]),
    (Box(3), [Text('{"w":3}')]),
    (42, [Text("42")]),
    (None, []),
    (["a", Text("b")], [Text("a"), Text("b")]),
    ([1, 2], [Text("[1,2]")]),
])
async def test_plain_returns(value: Any, expected: list[Any]) -> None:
    def returns() -> Any:
        return value

    invocation = await _run(returns)
    assert invocation.ok
    assert invocation.result.output == expected
    assert invocation.result.call_id == "call-7" and not invocation.result.is_error
    assert invocation.data is value


async def test_tool_output_splits_data_and_llm() -> None:
    payload = {"rows": 1000}

    async def query() -> ToolOutput[dict[str, int]]:
        return ToolOutput(payload, llm="1000 rows; first row: ...")

    invocation = await _run(query)
    assert invocation.data is payload
    assert invocation.result.output == [Text("1000 rows; first row: ...")]

    async def data_only() -> ToolOutput[dict[str, int]]:
        return ToolOutput(payload)

    assert (await _run(data_only)).result.output == [Text('{"rows":1000}')]


async def test_provider_raw() -> None:
    blocks = [{"type": "search_result", "source": "s", "title": "t", "content": []}]

    async def search() -> ToolOutput[str]:
        return ToolOutput("found", llm=provider_raw("anthropic", blocks))

    invocation = await _run(search)
    assert invocation.result.raw == ProviderRaw(provider="anthropic", value=blocks)
    # Other providers get the default conversion of the same value.
    assert json.loads(invocation.result.output[0].text) == blocks
    assert invocation.data == "found"


async def test_media_from_bytes_goes_into_the_store(tmp_path: Path) -> None:
    store = MemoryStore()
    ctx = Context(run_id="r", store=store)
    path = tmp_path / "clip.mp3"
    path.write_bytes(MP3)

    async def render() -> list[Any]:
        return ["here:", Image.from_bytes(PNG, "image/png", name="chart.png"),
                Audio.from_path(path), Video.from_url("https://example.test/v.mp4"),
                Document.from_bytes(b"%PDF-1.4 x", "application/pdf")]

    invocation = await _run(render, ctx=ctx)
    text, image, audio, video, document = invocation.result.output
    assert text == Text("here:")
    assert isinstance(image, Image) and image.source is None and image.handle is not None
    assert image.handle.kind is ContentKind.IMAGE and image.name == "chart.png"
    assert await store.fetch_bytes(image.handle) == PNG
    assert isinstance(audio, Audio) and audio.handle is not None
    assert await store.fetch_bytes(audio.handle) == MP3
    assert isinstance(video, Video) and video.handle is None  # URLs stay URLs
    assert isinstance(document, Document) and document.handle is not None
    assert document.handle.kind is ContentKind.DOCUMENT
    # The next turn can name the new content: it is visible in the run.
    assert {image.handle.id, audio.handle.id, document.handle.id} <= set(ctx.handles.ids())

    @tool
    async def reread(picture: ImageInput) -> int:
        return len(await picture.read())

    again = await invoke_tool(reread, ToolCall("c2", "reread",
                                               json.dumps({"picture": image.handle.id})), ctx)
    assert again.data == len(PNG)


async def test_single_part_without_store_stays_inline() -> None:
    async def pic() -> Image:
        return Image.from_bytes(PNG, "image/png")

    invocation = await _run(pic, ctx=Context(run_id="r"))
    assert invocation.result.output == [Image.from_bytes(PNG, "image/png")]


@pytest.mark.parametrize("value", [object(), b"\x89PNG", {"nested": [object()]}])
async def test_unconvertible_returns_name_the_tool(value: Any) -> None:
    def weird_tool() -> Any:
        return value

    invocation = await _run(weird_tool)
    assert invocation.result.is_error
    assert isinstance(invocation.error, ToolOutputError)
    assert "weird_tool" in invocation.result.output[0].text


async def test_tool_exception_becomes_error_result() -> None:
    def explode(n: int) -> int:
        raise ValueError(f"cannot handle {n}")

    invocation = await _run(explode, '{"n": 3}')
    assert invocation.result.is_error
    assert isinstance(invocation.error, ValueError)
    assert invocation.result.output == [Text("Tool 'explode' failed: ValueError: cannot handle 3")]


async def test_timeout_cancels_async_tool() -> None:
    finished: list[bool] = []

    async def slow() -> str:
        await anyio.sleep(10)
        finished.append(True)
        return "late"

    start = time.monotonic()
    invocation = await _run(slow, timeout=0.05)
    assert time.monotonic() - start < 2
    assert isinstance(invocation.error, ToolTimeout)
    assert invocation.result.is_error and "timed out after 0.05s" in invocation.result.output[0].text
    assert finished == []


async def test_timeout_abandons_sync_tool_and_tool_default_timeout() -> None:
    def blocking() -> str:
        time.sleep(0.5)
        return "late"

    start = time.monotonic()
    invocation = await invoke_tool(tool(timeout=0.05)(blocking), ToolCall("c", "blocking"),
                                   Context(run_id="r"))
    assert time.monotonic() - start < 0.4
    assert isinstance(invocation.error, ToolTimeout)


async def test_sync_tool_gets_context_and_runs_in_thread() -> None:
    import threading

    main = threading.get_ident()

    def where(ctx: Context) -> str:
        return f"{ctx.run_id}:{threading.get_ident() != main}"

    invocation = await _run(where, ctx=Context(run_id="run-9"))
    assert invocation.data == "run-9:True"
