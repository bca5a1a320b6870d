"""Anthropic Messages: SDK-validated requests, ordering rules, reply and stream parsing."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from _native_helpers import aiter_chunks, collect, every_split, materialize
from _native_matrix import PDF, PNG, conversations, reasoning_turn
from anthropic.types import MessageParam
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from pydantic import ConfigDict, TypeAdapter
from structlog.testing import capture_logs

from plait import (
    AuthenticationError,
    ContentRejected,
    ContextLengthExceeded,
    ConversationError,
    Document,
    FinishDelta,
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
from plait.providers import anthropic

# Module-level: adapters must outlive the lazy iterators they return.
MESSAGES = TypeAdapter(list[MessageParam], config=ConfigDict(extra="forbid"))
REQUEST = TypeAdapter(list[MessageCreateParamsNonStreaming], config=ConfigDict(extra="forbid"))
FILE = ProviderFileSource("anthropic", "file_011CcnXYZ", "image/png")
MATRIX = conversations(FILE)
TOOLS = [ToolSpec("get_file", "Fetch a file", {"type": "object",
                                               "properties": {"path": {"type": "string"}}})]


def build(messages: list[Message], **kw: Any) -> dict[str, Any]:
    return anthropic.build_request(ModelRequest("claude-sonnet-4-5", messages, tools=TOOLS, **kw))


def check_rules(body: dict[str, Any]) -> None:
    """What no SDK checks: alternation, results first, every tool_use answered in order."""
    messages = body["messages"]
    for prev, cur in itertools.pairwise(messages):
        assert prev["role"] != cur["role"], "roles must alternate"
    for i, message in enumerate(messages):
        for block in message["content"]:
            if block["type"] == "image" and block["source"]["type"] == "base64":
                assert block["source"]["media_type"] in anthropic._IMAGE_TYPES
                assert len(block["source"]["data"]) <= 5 * 1024 * 1024
        if message["role"] != "assistant":
            continue
        ids = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        if not ids:
            continue
        answer = messages[i + 1]["content"]
        head = answer[:len(ids)]
        assert [b["type"] for b in head] == ["tool_result"] * len(ids), "results first"
        assert [b["tool_use_id"] for b in head] == ids, "one result per call, in call order"
        assert all(b["type"] != "tool_result" for b in answer[len(ids):])


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_matrix_validates_strictly_with_the_sdk(name: str) -> None:
    body = build(MATRIX[name])
    materialize(MESSAGES.validate_python(body["messages"]))
    materialize(REQUEST.validate_python([body]))
    check_rules(body)
    json.dumps(body)  # plain JSON all the way down


def test_the_validator_is_really_strict() -> None:
    body = build(MATRIX["tool_image"])
    bad = json.loads(json.dumps(body["messages"]))
    bad[2]["content"][0]["content"][0]["source"]["media_type"] = "image/bmp"
    with pytest.raises(ValueError):
        materialize(MESSAGES.validate_python(bad))
    bad[2]["content"][0]["content"][0]["source"]["media_type"] = "image/png"
    bad[2]["content"][0]["content"][0]["extra"] = 1
    with pytest.raises(ValueError):
        materialize(MESSAGES.validate_python(bad))


def test_media_go_inside_the_tool_result() -> None:
    body = build(MATRIX["tool_mixed"])
    result = body["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "call_001"
    kinds = [b["type"] for b in result["content"]]
    assert kinds == ["text", "image", "text", "document", "text"]
    image = result["content"][1]["source"]
    assert image == {"type": "base64", "media_type": "image/png",
                     "data": __import__("base64").b64encode(PNG).decode()}
    document = result["content"][3]
    assert document["source"]["media_type"] == "application/pdf"
    assert document["title"] == "report.pdf"
    assert __import__("base64").b64decode(document["source"]["data"]) == PDF


def test_audio_and_video_become_notes_with_a_warning() -> None:
    with capture_logs() as logs:
        body = build(MATRIX["tool_all_kinds"])
    content = body["messages"][2]["content"][0]["content"]
    notes = [b["text"] for b in content if b["type"] == "text" and "omitted" in b["text"]]
    assert len(notes) == 2
    assert "audio" in notes[0] and "memo.wav" in notes[0]
    assert "video" in notes[1] and "clip.mp4" in notes[1]
    warned = [e for e in logs if e["event"] == "media_not_supported"]
    assert {e["kind"] for e in warned} == {"audio", "video"}


def test_several_results_are_reordered_and_followed_by_user_text() -> None:
    body = build(MATRIX["several_tool_calls"])
    answer = body["messages"][2]["content"]
    assert [b.get("tool_use_id") for b in answer[:3]] == ["call_000", "call_001", "call_002"]
    assert answer[1]["content"][0]["type"] == "image"
    assert answer[3] == {"type": "text", "text": "and now summarise"}
    assert len(body["messages"]) == 3


def test_error_results_and_empty_results() -> None:
    err = build(MATRIX["tool_error"])["messages"][2]["content"][0]
    assert err["is_error"] is True and err["content"] == [{"type": "text",
                                                            "text": "file not found"}]
    empty = build(MATRIX["empty_tool_result"])["messages"][2]["content"][0]
    assert "content" not in empty and "is_error" not in empty


def test_file_ids_use_file_sources_and_the_beta_header() -> None:
    request = ModelRequest("claude-sonnet-4-5", MATRIX["file_ids_tool"])
    body = anthropic.build_request(request)
    content = body["messages"][2]["content"][0]["content"]
    assert content[1]["source"] == {"type": "file", "file_id": "file_011CcnXYZ"}
    assert content[2]["source"] == {"type": "file", "file_id": "file_011CcnXYZd"}
    assert anthropic.request_headers(request) == {"anthropic-beta": anthropic.FILES_BETA}
    assert anthropic.request_headers(ModelRequest("claude-sonnet-4-5",
                                                  MATRIX["tool_image"])) == {}


def test_foreign_file_ids_and_unresolved_handles_are_rejected() -> None:
    foreign = Image(source=ProviderFileSource("openai", "file-abc"), mime_type="image/png")
    with pytest.raises(ContentRejected, match="rehost"):
        build([Message.user("x", foreign)])
    unresolved = Image(mime_type="image/png")
    with pytest.raises(ContentRejected, match="no source"):
        build([Message.user("x", unresolved)])
    with pytest.raises(ContentRejected, match="jpeg, png, gif or webp"):
        build([Message.user(Image.from_bytes(b"BM", "image/bmp"))])
    with pytest.raises(ContentRejected, match="PDF or plain text"):
        build([Message.user(Document.from_bytes(b"PK", "application/zip"))])


def test_text_documents_are_plain_text_sources() -> None:
    body = build([Message.user(Document.from_bytes("é,1\n".encode(), "text/csv"))])
    source = body["messages"][0]["content"][0]["source"]
    assert source == {"type": "text", "media_type": "text/plain", "data": "é,1\n"}


def test_unanswered_tool_call_is_a_conversation_error() -> None:
    with pytest.raises(ConversationError):
        build([Message.user("x"), Message.assistant(ToolCall("call_1", "t")),
               Message.user("next")])


def test_thinking_is_replayed_only_for_anthropic() -> None:
    own = build(reasoning_turn(Reasoning("hmm", provider="anthropic", signature="sig==")))
    assert own["messages"][1]["content"][0] == {"type": "thinking", "thinking": "hmm",
                                                "signature": "sig=="}
    redacted = build(reasoning_turn(Reasoning(provider="anthropic", data="opaque")))
    assert redacted["messages"][1]["content"][0] == {"type": "redacted_thinking",
                                                     "data": "opaque"}
    foreign = build(reasoning_turn(Reasoning("x", provider="openai", data="enc")))
    assert [b["type"] for b in foreign["messages"][1]["content"]] == ["tool_use"]
    for body in (own, redacted, foreign):
        materialize(MESSAGES.validate_python(body["messages"]))


def test_options_map_to_wire_fields() -> None:
    from plait import GenerationOptions

    body = build([Message("system", [Text("extra rule")]), Message.user("hi")],
                 system="Be terse.", tool_choice="required",
                 options=GenerationOptions(max_tokens=100, stop=["END"],
                                           reasoning_effort="low"))
    assert body["system"] == "Be terse.\n\nextra rule"
    assert body["tool_choice"] == {"type": "any"}
    assert body["max_tokens"] == 100 and body["stop_sequences"] == ["END"]
    assert body["output_config"] == {"effort": "low"}
    materialize(REQUEST.validate_python([body]))
    named = build([Message.user("hi")], tool_choice="get_file")
    assert named["tool_choice"] == {"type": "tool", "name": "get_file"}


def test_malformed_tool_arguments_are_kept() -> None:
    body = build([Message.user("x"), Message.assistant(ToolCall("c1", "t", "{oops")),
                  Message("tool", [ToolResult("c1", "t", [Text("bad args")])])])
    assert body["messages"][1]["content"][0]["input"] == {"_raw_arguments": "{oops"}


# --- replies ------------------------------------------------------------------------------------

REPLY = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "thinking", "thinking": "The user wants a file.", "signature": "EqQBCgIYAhIM"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3"},
        {"type": "text", "text": "Let me fetch it."},
        {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_file",
         "input": {"path": "a.png"}},
    ],
    "stop_reason": "tool_use", "stop_sequence": None,
    "usage": {"input_tokens": 2095, "output_tokens": 503, "cache_read_input_tokens": 7,
              "cache_creation_input_tokens": 3},
}


def test_parse_response() -> None:
    reply = anthropic.parse_response(REPLY)
    assert reply.parts == [
        Reasoning("The user wants a file.", provider="anthropic", signature="EqQBCgIYAhIM"),
        Reasoning(provider="anthropic", data="EmwKAhgBEgy3"),
        Text("Let me fetch it."),
        ToolCall("toolu_01A09q90qw90lq917835lq9", "get_file", '{"path": "a.png"}'),
    ]
    assert reply.usage == Usage(2095, 503, 7, 3)
    assert reply.finish_reason == "tool_calls"
    assert reply.response_id == "msg_01XFDUDYJgAACzvnptvVoYEL"
    # the reply replays: thinking comes back verbatim before the tool_use
    history = [Message.user("go"), reply.as_message(),
               Message("tool", [ToolResult(reply.tool_calls[0].id, "get_file", [Text("ok")])])]
    replay = build(history)["messages"][1]["content"]
    assert [b["type"] for b in replay] == ["thinking", "redacted_thinking", "text", "tool_use"]


def test_parse_response_error_body() -> None:
    with pytest.raises(ProviderError) as info:
        anthropic.parse_response({"type": "error", "error": {"type": "overloaded_error",
                                                             "message": "Overloaded"}})
    assert info.value.status == 529


def _sse(*events: dict[str, Any]) -> bytes:
    out = []
    for event in events:
        out.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n")
    return "".join(out).encode()


STREAM = _sse(
    {"type": "message_start", "message": {
        "id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message", "role": "assistant",
        "content": [], "model": "claude-sonnet-4-5", "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": 472, "output_tokens": 2}}},
    {"type": "content_block_start", "index": 0,
     "content_block": {"type": "thinking", "thinking": ""}},
    {"type": "content_block_delta", "index": 0,
     "delta": {"type": "thinking_delta", "thinking": "I need the wéather"}},
    {"type": "content_block_delta", "index": 0,
     "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "ping"},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 1,
     "delta": {"type": "text_delta", "text": "Okay, let's check"}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": " ☀"}},
    {"type": "content_block_stop", "index": 1},
    {"type": "content_block_start", "index": 2, "content_block": {
        "type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather",
        "input": {}}},
    {"type": "content_block_delta", "index": 2,
     "delta": {"type": "input_json_delta", "partial_json": ""}},
    {"type": "content_block_delta", "index": 2,
     "delta": {"type": "input_json_delta", "partial_json": "{\"location\":"}},
    {"type": "content_block_delta", "index": 2,
     "delta": {"type": "input_json_delta", "partial_json": " \"San Francisco, CA\"}"}},
    {"type": "content_block_stop", "index": 2},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
     "usage": {"output_tokens": 89}},
    {"type": "message_stop"},
)

EXPECTED = [
    ReasoningDelta("I need the wéather"),
    ReasoningDelta(signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3h"),
    TextDelta("Okay, let's check"),
    TextDelta(" ☀"),
    ToolCallStart(0, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather"),
    ToolCallDelta(0, "{\"location\":"),
    ToolCallDelta(0, " \"San Francisco, CA\"}"),
    ToolCallEnd(0),
    UsageDelta(Usage(472, 89)),
    FinishDelta("tool_calls", "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "claude-sonnet-4-5"),
]


def test_stream_parses_the_documented_events() -> None:
    assert collect(anthropic.parse_stream(aiter_chunks([STREAM]))) == EXPECTED


def test_stream_survives_every_split() -> None:
    for chunks in every_split(STREAM):
        assert collect(anthropic.parse_stream(aiter_chunks(chunks))) == EXPECTED


def test_stream_carries_redacted_thinking() -> None:
    stream = STREAM.replace(b"event: ping", _sse(
        {"type": "content_block_start", "index": 9,
         "content_block": {"type": "redacted_thinking", "data": "EmwKAhgB"}},
        {"type": "content_block_stop", "index": 9}).rstrip(b"\n") + b"\n\nevent: ping", 1)
    deltas = collect(anthropic.parse_stream(aiter_chunks([stream])))
    assert deltas[2] == ReasoningDelta(data="EmwKAhgB")
    assert deltas[:2] + deltas[3:] == EXPECTED


def test_stream_cut_before_message_stop_is_interrupted() -> None:
    cut = STREAM[:STREAM.index(b"event: message_delta")]
    with pytest.raises(StreamInterrupted):
        collect(anthropic.parse_stream(aiter_chunks([cut])))


def test_stream_error_event_is_a_provider_error() -> None:
    stream = STREAM[:STREAM.index(b"event: content_block_start")] + _sse(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    with pytest.raises(ProviderError) as info:
        collect(anthropic.parse_stream(aiter_chunks([stream])))
    assert info.value.status == 529 and "Overloaded" in str(info.value)


@pytest.mark.parametrize(("status", "etype", "message", "cls"), [
    (529, "overloaded_error", "Overloaded", ProviderError),
    (400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum",
     ContextLengthExceeded),
    (429, "rate_limit_error", "slow down", RateLimited),
    (401, "authentication_error", "invalid x-api-key", AuthenticationError),
])
def test_parse_error(status: int, etype: str, message: str, cls: type[ProviderError]) -> None:
    body = json.dumps({"type": "error", "error": {"type": etype, "message": message},
                       "request_id": "req_011"}).encode()
    error = anthropic.parse_error(status, body)
    assert type(error) is cls
    assert error.status == status and error.request_id == "req_011"
    assert message in str(error)
    assert anthropic.parse_error(502, b"<html>bad gateway</html>").status == 502
