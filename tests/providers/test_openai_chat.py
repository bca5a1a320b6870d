"""OpenAI Chat Completions and the compatible family: SDK-validated requests, placement and
pairing rules, reply and stream parsing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _native_helpers import aiter_chunks, collect, every_split, materialize
from _native_matrix import PDF, PNG, WAV, conversations, reasoning_turn
from openai.types.chat.completion_create_params import (
    CompletionCreateParamsNonStreaming,
    CompletionCreateParamsStreaming,
)
from pydantic import ConfigDict, TypeAdapter
from structlog.testing import capture_logs

from plait import (
    Audio,
    ContentRejected,
    ConversationError,
    Document,
    FinishDelta,
    GenerationOptions,
    Image,
    Message,
    ModelRequest,
    ProviderError,
    ProviderFileSource,
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
    Video,
)
from plait.providers import accumulate, openai_chat, openai_compat
from plait.providers.openai_chat import ChatWire

# Module-level adapters: they must outlive the lazy iterators they hand out (WIRE.md §9).
NON_STREAMING = TypeAdapter(list[CompletionCreateParamsNonStreaming],
                            config=ConfigDict(extra="forbid"))
STREAMING = TypeAdapter(list[CompletionCreateParamsStreaming], config=ConfigDict(extra="forbid"))

TOOLS = [ToolSpec("get_file", "Fetch a file", {"type": "object",
                                               "properties": {"path": {"type": "string"}}})]

# Every dialect whose wire shape the OpenAI SDK types describe (Mistral has its own test file).
OPENAI_SHAPED: dict[str, ChatWire] = {
    "openai": openai_chat.OPENAI,
    "azure": openai_compat.AZURE,
    "groq": openai_compat.GROQ,
    "deepseek": openai_compat.DEEPSEEK,
    "together": openai_compat.TOGETHER,
    "fireworks": openai_compat.FIREWORKS,
    "perplexity": openai_compat.PERPLEXITY,
    "xai": openai_compat.XAI,
    "openrouter": openai_compat.OPENROUTER,
    "fal": openai_compat.FAL,
}
MODELS = {"openai": "gpt-4.1", "azure": "gpt-4o", "groq": "meta-llama/llama-4-scout",
          "deepseek": "deepseek-chat", "xai": "grok-4"}


def _request(messages: list[Message], model: str, *, stream: bool = False) -> ModelRequest:
    return ModelRequest(model=model, messages=messages, tools=TOOLS, tool_choice="auto",
                        system="You are terse.", stream=stream,
                        options=GenerationOptions(temperature=0.2, max_tokens=64, seed=7))


def _validate(body: dict[str, Any]) -> list[Any]:
    adapter = STREAMING if body.get("stream") else NON_STREAMING
    return materialize(adapter.validate_python([body]))  # type: ignore[no-any-return]


def _roles(body: dict[str, Any]) -> list[str]:
    return [m["role"] for m in body["messages"]]


def _check_pairing(body: dict[str, Any]) -> None:
    """Our own rules: each assistant tool-call turn is followed by one tool message per call,
    in call order, before anything else."""
    messages = body["messages"]
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            assert messages[i - 1]["role"] in ("assistant", "tool")
        calls = message.get("tool_calls") or []
        if not calls:
            continue
        answers = messages[i + 1:i + 1 + len(calls)]
        assert [a["role"] for a in answers] == ["tool"] * len(calls)
        assert [a["tool_call_id"] for a in answers] == [c["id"] for c in calls]
        for answer in answers:
            assert isinstance(answer["content"], str)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("convo", sorted(conversations(
    ProviderFileSource("openai", "file-abc", "application/pdf"))))
@pytest.mark.parametrize("provider", sorted(OPENAI_SHAPED))
def test_matrix_validates_with_openai_sdk_types(provider: str, convo: str,
                                                stream: bool) -> None:
    wire = OPENAI_SHAPED[provider]
    messages = conversations(ProviderFileSource("openai", "file-abc",
                                                "application/pdf"))[convo]
    request = _request(messages, MODELS.get(provider, "some-model"), stream=stream)
    try:
        body = wire.build_request(request)
    except ContentRejected as exc:
        # Only sources this dialect cannot express may be refused, never kinds: those become
        # notes. OpenAI images by file id and foreign file ids are refused with a reason.
        assert convo.startswith("file_ids"), exc
        assert "file id" in str(exc)
        return
    _validate(body)
    _check_pairing(body)
    assert body["messages"][0] == {"role": "system", "content": "You are terse."}
    assert body["stream"] is True if stream else "stream" not in body
    assert json.dumps(body)  # plain JSON, no placeholder objects


def test_file_id_documents_go_as_file_parts_and_image_file_ids_are_refused() -> None:
    doc = Document(source=ProviderFileSource("openai", "file-doc", "application/pdf"),
                   mime_type="application/pdf", name="r.pdf")
    body = openai_chat.build_request(ModelRequest(model="gpt-4.1",
                                                  messages=[Message.user("read", doc)]))
    _validate(body)
    assert body["messages"][0]["content"][1] == {"type": "file",
                                                 "file": {"file_id": "file-doc"}}
    image = Image(source=ProviderFileSource("openai", "file-img", "image/png"),
                  mime_type="image/png")
    with pytest.raises(ContentRejected, match="file id"):
        openai_chat.build_request(ModelRequest(model="gpt-4.1",
                                               messages=[Message.user(image)]))
    foreign = Document(source=ProviderFileSource("anthropic", "file_x", "application/pdf"),
                       mime_type="application/pdf")
    with pytest.raises(ContentRejected, match="anthropic file id"):
        openai_chat.build_request(ModelRequest(model="gpt-4.1",
                                               messages=[Message.user(foreign)]))


def test_tool_media_move_to_one_user_message_after_the_whole_batch() -> None:
    body = openai_chat.build_request(_request(conversations()["several_tool_calls"],
                                              "gpt-4.1"))
    _validate(body)
    assert _roles(body) == ["system", "user", "assistant", "tool", "tool", "tool", "user",
                            "user"]
    tools = body["messages"][3:6]
    assert [t["tool_call_id"] for t in tools] == ["call_000", "call_001", "call_002"]
    assert tools[1]["content"].startswith("[item 1 of this result")
    assert "call_001" in tools[1]["content"]
    follow_up = body["messages"][6]["content"]
    assert follow_up[0] == {"type": "text", "text": "[tool call call_001 item 1: image, "
                                                    "'chart.png', image/png]"}
    assert follow_up[1]["type"] == "image_url"
    assert follow_up[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert body["messages"][7] == {"role": "user", "content": "and now summarise"}


def test_mixed_tool_output_keeps_text_and_labels_each_item() -> None:
    body = openai_chat.build_request(_request(conversations()["tool_mixed"], "gpt-4.1"))
    _validate(body)
    tool = body["messages"][3]["content"]
    assert tool.splitlines()[0] == "before"
    assert "item 2 of this result" in tool and "item 4 of this result" in tool
    follow = body["messages"][4]["content"]
    assert [p["type"] for p in follow] == ["text", "image_url", "text", "file"]
    assert follow[2]["text"].startswith("[tool call call_001 item 4: document")
    assert follow[3]["file"]["filename"] == "report.pdf"


def test_kinds_the_model_cannot_take_become_notes_and_warnings() -> None:
    with capture_logs() as logs:
        body = openai_chat.build_request(_request(conversations()["tool_all_kinds"],
                                                  "gpt-4.1"))
    tool = body["messages"][3]["content"]
    assert "[audio omitted: openai (gpt) does not accept audio content; name=memo.wav" in tool
    assert f"size={len(WAV)} bytes" in tool
    assert "[video omitted" in tool
    warned = sorted(e["kind"] for e in logs if e["event"] == "media_not_supported")
    assert warned == ["audio", "video"]


def test_audio_models_take_input_audio_in_the_follow_up() -> None:
    body = openai_chat.build_request(_request(conversations()["tool_audio"],
                                              "gpt-4o-audio-preview"))
    _validate(body)
    part = body["messages"][4]["content"][1]
    assert part["type"] == "input_audio"
    assert part["input_audio"]["format"] == "wav"
    bad = Audio.from_bytes(b"OggS", "audio/ogg")
    with pytest.raises(ContentRejected, match="not wav or mp3"):
        openai_chat.build_request(ModelRequest(model="gpt-4o-audio-preview",
                                               messages=[Message.user(bad)]))


def test_text_documents_are_sent_as_text() -> None:
    doc = Document.from_bytes(b"a,b\n1,2\n", "text/csv", name="t.csv")
    body = openai_chat.build_request(ModelRequest(model="gpt-4.1",
                                                  messages=[Message.user("sum", doc)]))
    _validate(body)
    assert body["messages"][0]["content"][1]["text"] == "[document t.csv (text/csv)]\na,b\n1,2\n"


def test_text_only_models_and_deepseek_get_string_content_with_notes() -> None:
    body = openai_compat.DEEPSEEK.build_request(
        _request(conversations()["user_mixed"], "deepseek-chat"))
    _validate(body)
    content = body["messages"][1]["content"]
    assert isinstance(content, str)
    assert content.startswith("a\n[image omitted: deepseek")
    assert body["max_tokens"] == 64 and "max_completion_tokens" not in body


def test_unanswered_and_orphan_tool_calls_raise() -> None:
    call = ToolCall("call_1", "f")
    with pytest.raises(ConversationError, match="call_1"):
        openai_chat.build_request(ModelRequest(model="gpt-4.1", messages=[
            Message.user("x"), Message.assistant(call), Message.user("y")]))
    with pytest.raises(ConversationError, match="without a preceding"):
        openai_chat.build_request(ModelRequest(model="gpt-4.1", messages=[
            Message("tool", [ToolResult("call_9", "f", [Text("r")])])]))
    with pytest.raises(ConversationError, match="answered twice"):
        openai_chat.build_request(ModelRequest(model="gpt-4.1", messages=[
            Message.assistant(call), Message("tool", [ToolResult("call_1", "f"),
                                                      ToolResult("call_1", "f")])]))


def test_unresolved_handle_is_a_typed_error() -> None:
    from _native_matrix import HANDLE

    with pytest.raises(ContentRejected, match=r"handle .* no source"):
        openai_chat.build_request(ModelRequest(model="gpt-4.1", messages=[
            Message.user(Image.from_handle(HANDLE))]))


def test_long_foreign_ids_are_shortened_consistently() -> None:
    long_id = "tooluse_" + "x" * 60
    body = openai_chat.build_request(ModelRequest(model="gpt-4.1", messages=[
        Message.user("go"), Message.assistant(ToolCall(long_id, "f")),
        Message("tool", [ToolResult(long_id, "f", [Text("ok")])])]))
    call_id = body["messages"][1]["tool_calls"][0]["id"]
    assert len(call_id) <= 40 and call_id == body["messages"][2]["tool_call_id"]


def test_reasoning_is_not_replayed_and_errors_are_marked() -> None:
    body = openai_chat.build_request(ModelRequest(model="gpt-4.1", messages=[
        *reasoning_turn(Reasoning("secret thoughts", provider="deepseek")),
        Message.assistant("done")]))
    _validate(body)
    assert "secret thoughts" not in json.dumps(body)
    errored = openai_chat.build_request(_request(conversations()["tool_error"], "gpt-4.1"))
    assert errored["messages"][3]["content"] == "[tool error] file not found"


# --- replies ---------------------------------------------------------------------------------


def test_parse_response_with_reasoning_tool_calls_and_usage() -> None:
    reply = openai_chat.parse_response({
        "id": "chatcmpl-1", "model": "gpt-4.1", "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Let me look.", "reasoning_content": "hmm",
            "tool_calls": [{"id": "call_a", "type": "function",
                            "function": {"name": "get_file", "arguments": "{\"p\":1}"}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                  "prompt_tokens_details": {"cached_tokens": 4},
                  "completion_tokens_details": {"reasoning_tokens": 2}}})
    assert reply.parts == [Reasoning("hmm", provider="openai"), Text("Let me look."),
                           ToolCall("call_a", "get_file", '{"p":1}')]
    assert reply.usage == Usage(10, 5, 4, 0, 2)
    assert (reply.finish_reason, reply.response_id, reply.model) == (
        "tool_calls", "chatcmpl-1", "gpt-4.1")


def test_parse_response_errors() -> None:
    with pytest.raises(ProviderError, match="overloaded"):
        openai_chat.parse_response({"error": {"message": "overloaded"}})
    with pytest.raises(ProviderError, match="no choices"):
        openai_chat.parse_response({"id": "x", "choices": []})


def _sse(*events: Any) -> bytes:
    out = b""
    for event in events:
        data = event if isinstance(event, str) else json.dumps(event)
        out += f"data: {data}\n\n".encode()
    return out


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c1", "model": "gpt-4.1", "choices": [{"index": 0, "delta": delta,
                                                         "finish_reason": finish}]}


STREAM = _sse(
    _chunk({"role": "assistant", "content": ""}),
    _chunk({"content": "Hel"}), _chunk({"content": "lo"}),
    _chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                            "function": {"name": "get_file", "arguments": ""}}]}),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"pa"}}]}),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "th\":\"é\"}"}}]}),
    _chunk({"tool_calls": [{"index": 1, "id": "call_2", "type": "function",
                            "function": {"name": "other", "arguments": "{}"}}]}),
    _chunk({}, "tool_calls"),
    {"id": "c1", "model": "gpt-4.1", "choices": [],
     "usage": {"prompt_tokens": 9, "completion_tokens": 3}},
    "[DONE]",
)
EXPECTED = [
    TextDelta("Hel"), TextDelta("lo"), ToolCallStart(0, "call_1", "get_file"),
    ToolCallDelta(0, "{\"pa"), ToolCallDelta(0, "th\":\"é\"}"), ToolCallStart(1, "call_2", "other"),
    ToolCallDelta(1, "{}"), UsageDelta(Usage(9, 3)), ToolCallEnd(0), ToolCallEnd(1),
    FinishDelta("tool_calls", "c1", "gpt-4.1"),
]


def test_stream_parses_identically_however_it_is_split() -> None:
    for chunks in every_split(STREAM):
        assert collect(openai_chat.parse_stream(aiter_chunks(chunks))) == EXPECTED


async def test_accumulate_turns_the_stream_into_the_reply() -> None:
    reply = await accumulate(openai_chat.parse_stream(aiter_chunks([STREAM])))
    assert reply.parts == [Text("Hello"), ToolCall("call_1", "get_file", '{"path":"é"}'),
                           ToolCall("call_2", "other", "{}")]
    assert reply.usage == Usage(9, 3)
    assert reply.finish_reason == "tool_calls"


def test_stream_reasoning_groq_usage_and_error_events() -> None:
    body = _sse(_chunk({"reasoning": "think"}), _chunk({"content": "ok"}, "stop"),
                {"id": "c1", "choices": [], "x_groq": {"usage": {"prompt_tokens": 2,
                                                                 "completion_tokens": 1}}},
                "[DONE]")
    deltas = collect(openai_chat.parse_stream(aiter_chunks([body])))
    assert deltas[:2] == [ReasoningDelta("think"), TextDelta("ok")]
    assert UsageDelta(Usage(2, 1)) in deltas
    with pytest.raises(ProviderError, match="server melted"):
        collect(openai_chat.parse_stream(aiter_chunks([
            _sse(_chunk({"content": "a"}), {"error": {"message": "server melted"}})])))


def test_cut_stream_raises_stream_interrupted() -> None:
    cut = STREAM[: STREAM.index(b"tool_calls\"}")]
    with pytest.raises(StreamInterrupted):
        collect(openai_chat.parse_stream(aiter_chunks([cut])))


def test_user_video_and_pdf_url_on_openai() -> None:
    video = Video.from_url("https://example.test/v.mp4", "video/mp4")
    body = openai_chat.build_request(ModelRequest(model="gpt-4.1", messages=[
        Message.user("watch", video)]))
    content = body["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "watch"}
    assert content[1]["text"].startswith("[video omitted: openai (gpt)")
    pdf_url = Document.from_url("https://example.test/a.pdf", "application/pdf")
    with pytest.raises(ContentRejected, match="no document URL"):
        openai_chat.build_request(ModelRequest(model="gpt-4.1",
                                               messages=[Message.user(pdf_url)]))


def test_inline_bytes_round_trip_through_data_urls() -> None:
    import base64

    body = openai_chat.build_request(ModelRequest(model="gpt-4.1", messages=[
        Message.user(Image.from_bytes(PNG, "image/png"), Document.from_bytes(PDF,
                                                                             "application/pdf"))]))
    image_url = body["messages"][0]["content"][0]["image_url"]["url"]
    file_data = body["messages"][0]["content"][1]["file"]["file_data"]
    assert base64.b64decode(image_url.split(",", 1)[1]) == PNG
    assert base64.b64decode(file_data.split(",", 1)[1]) == PDF


def test_empty_turns_stay_valid() -> None:
    body = openai_chat.build_request(ModelRequest(model="gpt-4.1", messages=[
        Message.user(), Message("assistant", [Reasoning("only thinking")]), Message.user("x")]))
    _validate(body)
    assert body["messages"] == [{"role": "user", "content": ""},
                                {"role": "user", "content": "x"}]
