"""OpenAI Responses: SDK-validated input items, media in function output, reasoning replay,
reply and stream parsing."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from _native_helpers import aiter_chunks, collect, every_split, materialize
from _native_matrix import PDF, PNG, conversations, reasoning_turn
from openai.types.responses import ResponseInputParam
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import ConfigDict, TypeAdapter
from structlog.testing import capture_logs

from plait import (
    ContentRejected,
    ContextLengthExceeded,
    FinishDelta,
    GenerationOptions,
    Image,
    Message,
    ModelRequest,
    ProviderError,
    ProviderFileSource,
    RateLimited,
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
from plait.providers import openai_responses as responses

INPUT = TypeAdapter(ResponseInputParam, config=ConfigDict(extra="forbid"))
REQUEST = TypeAdapter(list[ResponseCreateParamsNonStreaming], config=ConfigDict(extra="forbid"))
FILE = ProviderFileSource("openai", "file-BVTjQ8", "image/png")
MATRIX = conversations(FILE)
TOOLS = [ToolSpec("get_file", "Fetch a file", {"type": "object",
                                               "properties": {"path": {"type": "string"}}})]


def build(messages: list[Message], model: str = "gpt-4.1", **kw: Any) -> dict[str, Any]:
    return responses.build_request(ModelRequest(model, messages, tools=TOOLS, **kw))


def check_rules(body: dict[str, Any]) -> None:
    """Every function_call is answered by exactly one output, after it, before the next turn."""
    items = body["input"]
    pending: list[str] = []
    for item in items:
        kind = item.get("type")
        if kind == "function_call":
            pending.append(item["call_id"])
        elif kind == "function_call_output":
            assert item["call_id"] == pending.pop(0), "outputs in call order"
            output = item["output"]
            if isinstance(output, list):
                assert {p["type"] for p in output} <= {"input_text", "input_image", "input_file"}
        else:
            assert not pending, "a turn may not continue before every call is answered"
    assert not pending


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_matrix_validates_strictly_with_the_sdk(name: str) -> None:
    body = build(MATRIX[name])
    materialize(INPUT.validate_python(body["input"]))
    materialize(REQUEST.validate_python([body]))
    check_rules(body)


def test_the_validator_is_really_strict() -> None:
    bad = build(MATRIX["tool_image"])["input"]
    bad[-1]["output"][0]["type"] = "input_audio"
    with pytest.raises(ValueError):
        materialize(INPUT.validate_python(bad))


def test_media_go_inside_the_function_output() -> None:
    body = build(MATRIX["tool_mixed"])
    output = body["input"][-1]
    assert output["type"] == "function_call_output" and output["call_id"] == "call_001"
    items = output["output"]
    assert [i["type"] for i in items] == ["input_text", "input_image", "input_text",
                                          "input_file", "input_text"]
    assert items[1]["image_url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert items[3] == {"type": "input_file", "filename": "report.pdf",
                        "file_data": "data:application/pdf;base64,"
                                     + base64.b64encode(PDF).decode()}


def test_audio_and_video_become_notes() -> None:
    with capture_logs() as logs:
        body = build(MATRIX["tool_all_kinds"])
    texts = [i["text"] for i in body["input"][-1]["output"] if i["type"] == "input_text"]
    assert any("audio omitted" in t and "memo.wav" in t for t in texts)
    assert any("video omitted" in t and "clip.mp4" in t for t in texts)
    assert {e["kind"] for e in logs if e["event"] == "media_not_supported"} == {"audio",
                                                                                 "video"}


def test_text_only_results_are_strings_and_errors_say_so() -> None:
    one = build(MATRIX["one_tool_call"])["input"]
    assert one[1] == {"role": "assistant", "content": "Fetching."}
    assert one[2] == {"type": "function_call", "call_id": "call_001", "name": "get_file",
                      "arguments": '{"path": "x"}'}
    assert one[3] == {"type": "function_call_output", "call_id": "call_001",
                      "output": "42 rows"}
    err = build(MATRIX["tool_error"])["input"][3]
    assert err["output"] == "[tool error] file not found"


def test_several_calls_are_answered_in_call_order() -> None:
    items = build(MATRIX["several_tool_calls"])["input"]
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == ["call_000", "call_001", "call_002"]
    assert items[-1] == {"role": "user",
                         "content": [{"type": "input_text", "text": "and now summarise"}]}


def test_file_ids_and_urls() -> None:
    items = build(MATRIX["file_ids_tool"])["input"][-1]["output"]
    assert items[1] == {"type": "input_image", "detail": "auto", "file_id": "file-BVTjQ8"}
    assert items[2] == {"type": "input_file", "file_id": "file-BVTjQ8d"}
    url = build(MATRIX["url_image"])["input"][0]["content"][1]
    assert url == {"type": "input_image", "detail": "auto",
                   "image_url": "https://example.test/a.png"}
    with pytest.raises(ContentRejected, match="rehost"):
        build([Message.user(Image(source=ProviderFileSource("anthropic", "file_1"),
                                  mime_type="image/png"))])


def test_reasoning_items_are_replayed_before_their_call() -> None:
    reasoning = Reasoning("plan", provider="openai-responses", data="gAAAAenc", id="rs_123")
    body = build(reasoning_turn(reasoning), model="gpt-5")
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["input"][1] == {"type": "reasoning", "id": "rs_123",
                                "summary": [{"type": "summary_text", "text": "plan"}],
                                "encrypted_content": "gAAAAenc"}
    assert body["input"][2]["type"] == "function_call"
    materialize(INPUT.validate_python(body["input"]))
    foreign = build(reasoning_turn(Reasoning("x", provider="anthropic", signature="s")))
    assert [i.get("type") for i in foreign["input"]][1] == "function_call"
    assert "store" not in foreign


def test_options_map_to_wire_fields() -> None:
    with capture_logs() as logs:
        body = build([Message.user("hi")], system="Be terse.", tool_choice="get_file",
                     options=GenerationOptions(max_tokens=50, temperature=0.2, seed=1,
                                               reasoning_effort="low"))
    assert body["instructions"] == "Be terse."
    assert body["tool_choice"] == {"type": "function", "name": "get_file"}
    assert body["max_output_tokens"] == 50 and body["temperature"] == 0.2
    assert body["reasoning"] == {"effort": "low"}
    assert [e["option"] for e in logs if e["event"] == "option_not_supported"] == ["seed"]
    materialize(REQUEST.validate_python([body]))


# --- replies ------------------------------------------------------------------------------------

REPLY = {
    "id": "resp_67ccd2bed1ec8190b14f964abc054267", "object": "response", "status": "completed",
    "model": "gpt-5-2025-08-07",
    "output": [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text",
                                                           "text": "Need the file."}],
         "encrypted_content": "gAAAAABo"},
        {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
         "content": [{"type": "output_text", "text": "Fetching it.", "annotations": []}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_vqE", "name": "get_file",
         "arguments": "{\"path\":\"a.png\"}", "status": "completed"},
    ],
    "usage": {"input_tokens": 328, "input_tokens_details": {"cached_tokens": 12},
              "output_tokens": 52, "output_tokens_details": {"reasoning_tokens": 30},
              "total_tokens": 380},
}


def test_parse_response_and_replay() -> None:
    reply = responses.parse_response(REPLY)
    assert reply.parts == [
        Reasoning("Need the file.", provider="openai-responses", data="gAAAAABo", id="rs_1"),
        Text("Fetching it."),
        ToolCall("call_vqE", "get_file", "{\"path\":\"a.png\"}"),
    ]
    assert reply.usage == Usage(328, 52, 12, 0, 30)
    assert reply.finish_reason == "tool_calls" and reply.model == "gpt-5-2025-08-07"
    history = [Message.user("go"), reply.as_message(),
               Message("tool", [ToolResult("call_vqE", "get_file", [Text("done")])])]
    items = build(history, model="gpt-5")["input"]
    assert [i.get("type", "message") for i in items] == [
        "message", "reasoning", "message", "function_call", "function_call_output"]


def test_parse_response_incomplete_and_failed() -> None:
    incomplete = dict(REPLY, status="incomplete",
                      incomplete_details={"reason": "max_output_tokens"})
    assert responses.parse_response(incomplete).finish_reason == "length"
    with pytest.raises(ContextLengthExceeded):
        responses.parse_response({"status": "failed", "output": [], "error": {
            "code": "context_length_exceeded", "message": "too long"}})


def _sse(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


STREAM = _sse(
    {"type": "response.created", "sequence_number": 0, "response": {
        "id": "resp_1", "object": "response", "status": "in_progress", "model": "gpt-5",
        "output": []}},
    {"type": "response.in_progress", "sequence_number": 1, "response": {"id": "resp_1"}},
    {"type": "response.output_item.added", "output_index": 0, "sequence_number": 2,
     "item": {"id": "rs_1", "type": "reasoning", "summary": []}},
    {"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0,
     "summary_index": 0, "delta": "Thinking…", "sequence_number": 3},
    {"type": "response.output_item.done", "output_index": 0, "sequence_number": 4,
     "item": {"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAAAenc",
              "summary": [{"type": "summary_text", "text": "Thinking…"}]}},
    {"type": "response.output_item.added", "output_index": 1, "sequence_number": 5,
     "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant",
              "content": []}},
    {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1,
     "content_index": 0, "delta": "Let me", "sequence_number": 6},
    {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1,
     "content_index": 0, "delta": " check.", "sequence_number": 7},
    {"type": "response.output_item.done", "output_index": 1, "sequence_number": 8,
     "item": {"id": "msg_1", "type": "message"}},
    {"type": "response.output_item.added", "output_index": 2, "sequence_number": 9,
     "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1",
              "name": "get_weather", "arguments": "", "status": "in_progress"}},
    {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 2,
     "delta": "{\"location\":", "sequence_number": 10},
    {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 2,
     "delta": "\"Paris\"}", "sequence_number": 11},
    {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 2,
     "arguments": "{\"location\":\"Paris\"}", "sequence_number": 12},
    {"type": "response.output_item.done", "output_index": 2, "sequence_number": 13,
     "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1"}},
    {"type": "response.completed", "sequence_number": 14, "response": {
        "id": "resp_1", "status": "completed", "model": "gpt-5",
        "usage": {"input_tokens": 37, "output_tokens": 11,
                  "output_tokens_details": {"reasoning_tokens": 4}}}},
)

EXPECTED = [
    ReasoningDelta("Thinking…"),
    ReasoningDelta(id="rs_1", data="gAAAAenc"),
    TextDelta("Let me"),
    TextDelta(" check."),
    ToolCallStart(0, "call_1", "get_weather"),
    ToolCallDelta(0, "{\"location\":"),
    ToolCallDelta(0, "\"Paris\"}"),
    ToolCallEnd(0),
    UsageDelta(Usage(37, 11, reasoning_tokens=4)),
    FinishDelta("tool_calls", "resp_1", "gpt-5"),
]


def test_stream_parses_the_documented_events() -> None:
    assert collect(responses.parse_stream(aiter_chunks([STREAM]))) == EXPECTED


def test_stream_survives_every_two_way_split() -> None:
    for chunks in every_split(STREAM):
        assert collect(responses.parse_stream(aiter_chunks(chunks))) == EXPECTED


def test_stream_cut_is_interrupted_and_errors_are_typed() -> None:
    cut = STREAM[:STREAM.index(b"event: response.completed")]
    with pytest.raises(StreamInterrupted):
        collect(responses.parse_stream(aiter_chunks([cut])))
    limited = _sse({"type": "error", "code": "rate_limit_exceeded", "message": "slow down",
                    "sequence_number": 1})
    with pytest.raises(RateLimited):
        collect(responses.parse_stream(aiter_chunks([limited])))
    failed = _sse({"type": "response.failed", "response": {
        "id": "resp_2", "status": "failed", "error": {"code": "server_error",
                                                      "message": "boom"}}})
    with pytest.raises(ProviderError, match="boom"):
        collect(responses.parse_stream(aiter_chunks([failed])))
