"""The resolver: ids become content objects; bad input becomes a typed error; scope is enforced."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from plait import (
    ContentHandle,
    ContentInput,
    Context,
    FileInput,
    HandleScope,
    ImageInput,
    InlineSource,
    InvalidToolArguments,
    KindMismatch,
    Tool,
    ToolCall,
    UnknownHandle,
    invoke_tool,
    resolve_arguments,
    tool,
)
from plait.stores import MemoryStore

from .conftest import MP3, PNG

calls: list[dict[str, Any]] = []


class Pair(BaseModel):
    left: ImageInput
    right: ImageInput | None = None


@tool
async def compare(pair: Pair, others: list[ImageInput], attachment: FileInput | None = None,
                  label: str = "") -> str:
    """Compare images."""
    calls.append({"pair": pair, "others": others, "attachment": attachment})
    return "compared"


async def _ctx() -> tuple[Context, dict[str, ContentHandle]]:
    store = MemoryStore()
    ctx = Context(run_id="run-1", store=store)
    handles = {
        "png": ctx.handles.add(await store.put(PNG, display_name="a.png")),
        "png2": ctx.handles.add(await store.put(PNG, display_name="b.png")),
        "mp3": ctx.handles.add(await store.put(MP3, display_name="song.mp3")),
    }
    # In the store, but not visible to this run: another run's content.
    handles["foreign"] = await store.put(PNG, display_name="theirs.png")
    return ctx, handles


async def test_resolves_nested_lists_and_optionals() -> None:
    ctx, h = await _ctx()
    args = {"pair": {"left": h["png"].id, "right": h["png2"].id}, "others": [h["png"].id],
            "attachment": h["mp3"].id}
    kwargs = await resolve_arguments(compare, json.dumps(args), ctx)
    pair = kwargs["pair"]
    assert isinstance(pair, Pair)
    assert isinstance(pair.left, ImageInput) and pair.left.id == h["png"].id
    assert pair.left.display_name == "a.png" and pair.left.mime_type == "image/png"
    assert pair.left.byte_size == len(PNG)
    assert isinstance(pair.left.source, InlineSource)
    assert await pair.left.read() == PNG
    assert b"".join([c async for c in pair.right.stream()]) == PNG  # type: ignore[union-attr]
    assert [o.id for o in kwargs["others"]] == [h["png"].id]
    # A file parameter takes any kind: the audio handle is accepted.
    assert isinstance(kwargs["attachment"], FileInput)
    assert kwargs["attachment"].kind.value == "audio"
    assert kwargs["label"] == ""


@pytest.mark.parametrize(("arguments", "error", "fragment"), [
    ("{not json", InvalidToolArguments, "not valid JSON"),
    ("[1, 2]", InvalidToolArguments, "must be a JSON object"),
    ('{"others": []}', InvalidToolArguments, "pair: Field required"),
    ('{"pair": {"left": 5}, "others": []}', InvalidToolArguments, "pair.left"),
    ('{"pair": {"left": "h_guess"}, "others": []}', UnknownHandle, "h_guess"),
    ('{"pair": {"left": "FOREIGN"}, "others": []}', UnknownHandle, "is visible in this run"),
    ('{"pair": {"left": "MP3"}, "others": []}', KindMismatch, "is audio"),
    ('{"pair": {"left": "PNG"}, "others": ["MP3"]}', KindMismatch, "others.0"),
    ('{"pair": {"left": "PNG"}, "others": [], "extra": 1}', InvalidToolArguments, "extra"),
])
async def test_bad_arguments_are_typed(arguments: str, error: type[Exception],
                                       fragment: str) -> None:
    ctx, h = await _ctx()
    arguments = (arguments.replace("FOREIGN", h["foreign"].id).replace("MP3", h["mp3"].id)
                 .replace("PNG", h["png"].id))
    with pytest.raises(error) as info:
        await resolve_arguments(compare, arguments, ctx)
    assert fragment in str(info.value)

    before = len(calls)
    invocation = await invoke_tool(compare, ToolCall("call-1", "compare", arguments), ctx)
    assert len(calls) == before, "the tool must not run on bad arguments"
    assert invocation.result.is_error
    assert isinstance(invocation.error, error)
    assert invocation.result.call_id == "call-1"
    text = invocation.result.output[0].text  # type: ignore[union-attr]
    assert fragment in text
    if error is not InvalidToolArguments:
        # The model is told which ids it may use; the foreign id is not among them.
        assert h["png"].id in text and h["mp3"].id in text
        assert h["foreign"].id not in text.split("may use:")[1]


async def test_unknown_handle_even_without_store() -> None:
    ctx = Context(run_id="r")
    with pytest.raises(UnknownHandle):
        await resolve_arguments(compare, '{"pair": {"left": "h_x"}, "others": []}', ctx)


async def test_content_without_store_cannot_be_read() -> None:
    handle = ContentHandle("h_abc", "image", mime_type="image/png")
    ctx = Context(run_id="r", handles=HandleScope([handle]))
    kwargs = await resolve_arguments(compare, '{"pair": {"left": "h_abc"}, "others": []}', ctx)
    left = kwargs["pair"].left
    assert left.source is None
    with pytest.raises(Exception, match="no content store"):
        await left.read()


async def test_empty_arguments_mean_no_arguments() -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert await resolve_arguments(ping, "", Context(run_id="r")) == {}
    assert await resolve_arguments(ping, "  ", Context(run_id="r")) == {}


async def test_schema_tool_refs() -> None:
    ctx, h = await _ctx()
    seen: list[dict[str, Any]] = []

    async def call(arguments: dict[str, Any], ctx: Context | None) -> str:
        seen.append(arguments)
        return "done"

    schema = {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
            "maybe": {"anyOf": [{"type": "string", "x-plait-content-ref": {"kind": "audio"}},
                                {"type": "null"}]},
        },
        "$defs": {"Item": {"type": "object", "properties": {
            "img": {"type": "string", "x-plait-content-ref": {"kind": "image"}}}}},
    }
    raw_tool = Tool.from_schema("raw", call, parameters=schema)
    kwargs = await resolve_arguments(
        raw_tool, {"items": [{"img": h["png"].id}], "maybe": h["mp3"].id, "n": 3}, ctx)
    assert isinstance(kwargs["items"][0]["img"], ContentInput)
    assert kwargs["items"][0]["img"].kind.value == "image"
    assert kwargs["maybe"].id == h["mp3"].id
    assert kwargs["n"] == 3
    with pytest.raises(KindMismatch):
        await resolve_arguments(raw_tool, {"items": [{"img": h["mp3"].id}]}, ctx)
    with pytest.raises(UnknownHandle):
        await resolve_arguments(raw_tool, {"items": [{"img": h["foreign"].id}]}, ctx)
    with pytest.raises(InvalidToolArguments):
        await resolve_arguments(raw_tool, {"items": [{"img": 7}]}, ctx)
    invocation = await invoke_tool(raw_tool, ToolCall("c", "raw", '{"maybe": null}'), ctx)
    assert invocation.ok and seen[-1] == {"maybe": None}
