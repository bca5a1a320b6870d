"""Ollama /api/chat: requests validated with the ollama SDK models, id-less pairing by order and
tool_name, images on a following user message, NDJSON parsing, end to end on loopback."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from _native_helpers import aiter_chunks, collect, every_split
from _native_matrix import PNG, conversations
from ollama._types import ChatRequest
from test_openai_compat import assert_nothing_dropped

from plait import (
    ContentRejected,
    FinishDelta,
    GenerationOptions,
    Image,
    Message,
    ModelRequest,
    ProviderError,
    Reasoning,
    ReasoningDelta,
    StreamInterrupted,
    Text,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
    ToolSpec,
    Usage,
    UsageDelta,
)
from plait.providers import accumulate, connect, ollama
from plait.testing import OllamaEmulator, ScriptedReply

TOOLS = [ToolSpec("get_file", "Fetch a file", {"type": "object", "properties": {}})]


def _build(messages: list[Message], model: str = "llava:13b", *,
           stream: bool = False) -> dict[str, Any]:
    return ollama.build_request(ModelRequest(
        model=model, messages=messages, tools=TOOLS, system="Be brief.", stream=stream,
        options=GenerationOptions(temperature=0.1, max_tokens=20, seed=1)))


@pytest.mark.parametrize("model", ["llava:13b", "llama3.1:8b"])
@pytest.mark.parametrize("convo", sorted(conversations()))
def test_matrix_validates_with_ollama_sdk_models(convo: str, model: str) -> None:
    if convo == "url_image" and model == "llava:13b":
        with pytest.raises(ContentRejected, match="inline or local"):
            _build(conversations()[convo], model)  # Ollama fetches nothing: rehost first
        return
    body = _build(conversations()[convo], model)
    validated = ChatRequest.model_validate(body)
    assert_nothing_dropped(body, validated.model_dump(by_alias=True, exclude_unset=True))
    for message in body["messages"]:
        assert isinstance(message["content"], str)
        if message["role"] != "user":
            assert "images" not in message
        for image in message.get("images", []):
            assert not image.startswith("data:")
            base64.b64decode(image, validate=True)
    assert body["stream"] is False and body["options"]["num_predict"] == 20


def test_tool_results_follow_call_order_with_tool_name() -> None:
    body = _build(conversations()["several_tool_calls"])
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool",
                                             "tool", "user", "user"]
    assert [c["function"]["name"] for c in messages[2]["tool_calls"]] == [
        "tool_0", "tool_1", "tool_2"]
    assert [m["tool_name"] for m in messages[3:6]] == ["tool_0", "tool_1", "tool_2"]
    assert [m["content"].split("\n")[0] for m in (messages[3], messages[5])] == ["zero", "two"]
    follow = messages[6]
    assert follow["content"] == "[tool call call_001 item 1: image, 'chart.png', image/png]"
    assert base64.b64decode(follow["images"][0]) == PNG
    assert "tool_call_id" not in json.dumps(body) and "\"id\"" not in json.dumps(body)


def test_arguments_are_objects_and_malformed_ones_are_kept() -> None:
    body = _build([Message.user("x"), Message.assistant(ToolCall("a", "f", '{"n": 1}'),
                                                        ToolCall("b", "g", "{oops")),
                   Message("tool", [ToolResult("a", "f", [Text("1")])]),
                   Message("tool", [ToolResult("b", "g", [Text("2")])])])
    calls = body["messages"][2]["tool_calls"]
    assert calls[0]["function"]["arguments"] == {"n": 1}
    assert calls[1]["function"]["arguments"] == {"_raw_arguments": "{oops"}


def test_text_models_note_images_and_urls_are_rejected() -> None:
    body = _build(conversations()["tool_image"], "llama3.1:8b")
    assert "[image omitted: ollama (text)" in body["messages"][3]["content"]
    with pytest.raises(ContentRejected, match="inline or local"):
        _build([Message.user(Image.from_url("https://example.test/a.png", "image/png"))])


def test_reasoning_replays_as_thinking() -> None:
    body = _build([Message.user("q"), Message("assistant", [Reasoning("hmm"), Text("a")])])
    assert body["messages"][2] == {"role": "assistant", "content": "a", "thinking": "hmm"}


def test_parse_response_synthesizes_stable_ids() -> None:
    data = {"model": "llama3.1", "created_at": "2026-01-01T00:00:00Z", "done": True,
            "done_reason": "stop", "prompt_eval_count": 5, "eval_count": 2,
            "message": {"role": "assistant", "content": "", "thinking": "t",
                        "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}}
    reply = ollama.parse_response(data)
    again = ollama.parse_response(data)
    (call,) = reply.tool_calls
    assert call.id == again.tool_calls[0].id and call.id.startswith("ollama_0_")
    assert (call.name, json.loads(call.arguments)) == ("f", {"a": 1})
    assert reply.parts[0] == Reasoning("t", provider="ollama")
    assert reply.usage == Usage(5, 2) and reply.finish_reason == "tool_calls"
    with pytest.raises(ProviderError, match="model not found"):
        ollama.parse_response({"error": "model not found"})


STREAM = b"".join(json.dumps(line).encode() + b"\n" for line in [
    {"model": "m", "created_at": "t", "message": {"role": "assistant", "content": "",
                                                   "thinking": "hm"}, "done": False},
    {"model": "m", "created_at": "t", "message": {"role": "assistant", "content": "Hé"},
     "done": False},
    {"model": "m", "created_at": "t", "message": {"role": "assistant", "content": "",
                                                   "tool_calls": [{"function": {
                                                       "name": "f", "arguments": {"x": 2}}}]},
     "done": False},
    {"model": "m", "created_at": "t", "message": {"role": "assistant", "content": ""},
     "done": True, "done_reason": "stop", "prompt_eval_count": 4, "eval_count": 3},
])


def test_ndjson_stream_parses_identically_however_it_is_split() -> None:
    expected = collect(ollama.parse_stream(aiter_chunks([STREAM])))
    assert isinstance(expected[2], ToolCallStart)
    call_id = expected[2].id
    assert call_id.startswith("ollama_0_")
    assert expected == [ReasoningDelta("hm"), TextDelta("Hé"), ToolCallStart(0, call_id, "f"),
                        ToolCallDelta(0, '{"x":2}'), ToolCallEnd(0), UsageDelta(Usage(4, 3)),
                        FinishDelta("tool_calls", None, "m")]
    for chunks in every_split(STREAM):
        assert collect(ollama.parse_stream(aiter_chunks(chunks))) == expected


def test_cut_ndjson_stream_and_error_line() -> None:
    with pytest.raises(StreamInterrupted):
        collect(ollama.parse_stream(aiter_chunks([STREAM[:STREAM.rindex(b'{"model"')]])))
    with pytest.raises(ProviderError, match="boom"):
        collect(ollama.parse_stream(aiter_chunks([b'{"error": "boom"}\n'])))


async def test_end_to_end_complete_and_stream() -> None:
    emulator = OllamaEmulator(ScriptedReply("Hello there", [("x", "get_file", '{"p": 1}')],
                                            reasoning="plan"))
    messages = [Message.user("look", Image.from_bytes(PNG, "image/png"))]
    with emulator.serve() as server:
        async with connect("ollama:llava:13b", base_url=server.url) as llm:
            reply = await llm.complete(ModelRequest(model="", messages=messages, tools=TOOLS))
            streamed = await accumulate(llm.stream(ModelRequest(model="", messages=messages,
                                                                tools=TOOLS)))
    assert reply.text == "Hello there" and streamed.text == "Hello there"
    assert [(c.name, json.loads(c.arguments)) for c in streamed.tool_calls] == [
        ("get_file", {"p": 1})]
    assert reply.tool_calls[0].name == "get_file"
    first, second = (r.json() for r in emulator.received)
    assert emulator.received[0].path == "/api/chat"
    assert first["stream"] is False and second["stream"] is True
    assert first["model"] == "llava:13b"
    assert base64.b64decode(first["messages"][0]["images"][0]) == PNG
    assert emulator.received[0].header("authorization") is None
