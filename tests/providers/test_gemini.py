"""Gemini: google-genai-validated contents, function responses with media (Gemini 3) and the
follow-up user Content (Gemini 2.5), id and thoughtSignature echo, reply and stream parsing."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from _native_helpers import aiter_chunks, collect, every_split
from _native_matrix import PNG, conversations, reasoning_turn
from google.genai import types

from plait import (
    ContentRejected,
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
from plait.providers import gemini

FILE = ProviderFileSource("gemini", "files/3qsw", "image/png",
                          uri=gemini.FILES_BASE + "files/3qsw")
MATRIX = conversations(FILE)
TOOLS = [ToolSpec("get_file", "Fetch a file", {"type": "object",
                                               "properties": {"path": {"type": "string"}}})]
G3 = "gemini-3-pro-preview"
G25 = "gemini-2.5-flash"


def build(messages: list[Message], model: str = G3, **kw: Any) -> dict[str, Any]:
    return gemini.build_request(ModelRequest(model, messages, tools=TOOLS, **kw))


def validate(body: dict[str, Any]) -> None:
    for content in body["contents"]:
        types.Content.model_validate(content)
    if "systemInstruction" in body:
        types.Content.model_validate(body["systemInstruction"])
    for tool in body.get("tools", []):
        types.Tool.model_validate(tool)
    if "toolConfig" in body:
        types.ToolConfig.model_validate(body["toolConfig"])
    if "generationConfig" in body:
        types.GenerationConfig.model_validate(body["generationConfig"])
    assert set(body) <= {"contents", "systemInstruction", "tools", "toolConfig",
                         "generationConfig"}


def check_rules(body: dict[str, Any]) -> None:
    """The checks google-genai leaves to us (every field there is optional)."""
    contents = body["contents"]
    for i, content in enumerate(contents):
        assert content["role"] in ("user", "model") and content["parts"]
        calls = [p["functionCall"] for p in content["parts"] if "functionCall" in p]
        if content["role"] == "model" and calls:
            answer = contents[i + 1]
            responses = [p["functionResponse"] for p in answer["parts"]]
            assert answer["role"] == "user"
            assert all("functionResponse" in p for p in answer["parts"])
            assert len(responses) == len(calls), "as many responses as calls, in one Content"
            assert [r["name"] for r in responses] == [c["name"] for c in calls]
            assert [r.get("id") for r in responses] == [c.get("id") for c in calls]
            for response in responses:
                assert set(response["response"]) <= {"output", "error"}
                for part in response.get("parts", []):
                    assert set(part) <= {"inlineData", "fileData"}, "no text in parts"


@pytest.mark.parametrize("model", [G3, G25])
@pytest.mark.parametrize("name", sorted(MATRIX))
def test_matrix_validates_with_google_genai(name: str, model: str) -> None:
    body = build(MATRIX[name], model)
    validate(body)
    check_rules(body)


def test_the_validator_is_really_strict() -> None:
    body = build(MATRIX["tool_image"])
    bad = json.loads(json.dumps(body["contents"][2]))
    bad["parts"][0]["functionResponse"]["parts"].append({"text": "not allowed"})
    with pytest.raises(ValueError):
        types.Content.model_validate(bad)


def test_gemini_3_puts_media_inside_the_function_response() -> None:
    body = build(MATRIX["tool_mixed"], G3)
    assert len(body["contents"]) == 3
    response = body["contents"][2]["parts"][0]["functionResponse"]
    assert response["id"] == "call_001" and response["name"] == "get_file"
    assert response["response"] == {"output": "before\nbetween\nafter"}
    assert response["parts"][0] == {"inlineData": {"mimeType": "image/png",
                                                   "data": base64.b64encode(PNG).decode()}}
    assert response["parts"][1]["inlineData"]["mimeType"] == "application/pdf"


def test_gemini_3_moves_audio_and_video_to_a_follow_up_user_content() -> None:
    body = build(MATRIX["tool_all_kinds"], G3)
    response = body["contents"][2]["parts"][0]["functionResponse"]
    assert [p["inlineData"]["mimeType"] for p in response["parts"]] == ["image/png",
                                                                        "application/pdf"]
    follow = body["contents"][3]
    assert follow["role"] == "user"
    mimes = [p["inlineData"]["mimeType"] for p in follow["parts"] if "inlineData" in p]
    assert mimes == ["audio/wav", "video/mp4"]
    labels = [p["text"] for p in follow["parts"] if "text" in p]
    assert all("call_001" in label for label in labels) and len(labels) == 2


def test_gemini_3_keeps_only_documented_types_inside() -> None:
    from plait import Document

    csv = Document.from_bytes(b"a,b\n1,2\n", "text/csv", name="t.csv")
    heic = Image.from_bytes(b"heic", "image/heic", name="p.heic")
    body = build(_turn_with([Text("two"), csv, heic, Image.from_bytes(PNG, "image/png")]))
    response = body["contents"][2]["parts"][0]["functionResponse"]
    assert [p["inlineData"]["mimeType"] for p in response["parts"]] == ["image/png"]
    follow = body["contents"][3]["parts"]
    assert [p["inlineData"]["mimeType"] for p in follow if "inlineData" in p] == [
        "text/csv", "image/heic"]
    validate(body)
    check_rules(body)


def _turn_with(output: list[Any]) -> list[Message]:
    call = ToolCall("call_9", "get_file", "{}")
    return [Message.user("x"), Message.assistant(call),
            Message("tool", [ToolResult(call.id, call.name, output)])]


def test_gemini_25_sends_media_after_the_whole_batch() -> None:
    body = build(MATRIX["several_tool_calls"], G25)
    answer = body["contents"][2]
    assert [p["functionResponse"]["id"] for p in answer["parts"]] == ["call_000", "call_001",
                                                                      "call_002"]
    placeholder = answer["parts"][1]["functionResponse"]
    assert "parts" not in placeholder
    assert "call_001" in placeholder["response"]["output"]
    follow = body["contents"][3]
    assert follow["role"] == "user"
    assert "call_001" in follow["parts"][0]["text"]
    assert follow["parts"][1]["inlineData"]["mimeType"] == "image/png"
    assert body["contents"][4] == {"role": "user", "parts": [{"text": "and now summarise"}]}


def test_errors_go_in_the_error_key() -> None:
    response = build(MATRIX["tool_error"])["contents"][2]["parts"][0]["functionResponse"]
    assert response["response"] == {"error": "file not found"}


def test_file_ids_and_urls_become_file_data() -> None:
    response = build(MATRIX["file_ids_tool"], G3)["contents"][2]["parts"][0]["functionResponse"]
    assert response["parts"][0] == {"fileData": {"mimeType": "image/png", "fileUri": FILE.uri}}
    bare = ProviderFileSource("gemini", "files/xyz", "image/png")
    body = build([Message.user(Image(source=bare, mime_type="image/png"))])
    uri = body["contents"][0]["parts"][0]["fileData"]["fileUri"]
    assert uri == gemini.FILES_BASE + "files/xyz" and uri.endswith("/v1beta/files/xyz")
    with pytest.raises(ContentRejected, match="rehost"):
        build([Message.user(Image(source=ProviderFileSource("openai", "file-1"),
                                  mime_type="image/png"))])


def test_ids_and_thought_signatures_are_echoed() -> None:
    body = build(reasoning_turn(Reasoning("plan", provider="gemini", signature="Ep8H"),
                                signature="CiQB"))
    model = body["contents"][1]["parts"]
    assert model[0] == {"text": "plan", "thought": True, "thoughtSignature": "Ep8H"}
    assert model[1] == {"functionCall": {"name": "lookup", "args": {"q": 1}, "id": "call_r1"},
                        "thoughtSignature": "CiQB"}
    validate(body)


def test_local_ids_are_not_sent() -> None:
    call = ToolCall(gemini.LOCAL_ID_PREFIX + "r_0", "get_file", "{}")
    body = build([Message.user("x"), Message.assistant(call),
                  Message("tool", [ToolResult(call.id, "get_file", [Text("ok")])])], G25)
    assert "id" not in body["contents"][1]["parts"][0]["functionCall"]
    assert "id" not in body["contents"][2]["parts"][0]["functionResponse"]


def test_options_and_tools() -> None:
    body = build([Message("system", [Text("rule")]), Message.user("hi")], system="Be terse.",
                 tool_choice="get_file",
                 options=GenerationOptions(temperature=0.1, max_tokens=64, stop=["X"], seed=3,
                                           reasoning_effort="low"))
    assert body["systemInstruction"] == {"parts": [{"text": "Be terse.\n\nrule"}]}
    assert body["toolConfig"] == {"functionCallingConfig": {
        "mode": "ANY", "allowedFunctionNames": ["get_file"]}}
    assert body["generationConfig"] == {"temperature": 0.1, "maxOutputTokens": 64,
                                        "stopSequences": ["X"], "seed": 3,
                                        "thinkingConfig": {"thinkingLevel": "low"}}
    assert body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"] == \
        TOOLS[0].parameters
    validate(body)
    older = build([Message.user("hi")], G25,
                  options=GenerationOptions(reasoning_effort="high"))
    assert older["generationConfig"] == {"thinkingConfig": {"thinkingBudget": 24576}}


# --- replies ------------------------------------------------------------------------------------

REPLY = {
    "candidates": [{
        "content": {"role": "model", "parts": [
            {"text": "I should fetch it.", "thought": True},
            {"text": "Fetching."},
            {"functionCall": {"id": "spt7zdfl", "name": "get_file", "args": {"path": "a"}},
             "thoughtSignature": "Ep8H"},
            {"functionCall": {"id": "q2x", "name": "get_file", "args": {"path": "b"}}},
        ]},
        "finishReason": "STOP", "index": 0,
    }],
    "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 30,
                      "thoughtsTokenCount": 12, "cachedContentTokenCount": 5,
                      "totalTokenCount": 162},
    "modelVersion": "gemini-3-pro-preview", "responseId": "resp-gem-1",
}


def test_parse_response_and_replay() -> None:
    reply = gemini.parse_response(REPLY)
    assert reply.parts == [
        Reasoning("I should fetch it.", provider="gemini"),
        Text("Fetching."),
        ToolCall("spt7zdfl", "get_file", '{"path": "a"}', "Ep8H"),
        ToolCall("q2x", "get_file", '{"path": "b"}'),
    ]
    assert reply.usage == Usage(120, 42, 5, 0, 12)
    assert reply.finish_reason == "tool_calls" and reply.response_id == "resp-gem-1"
    history = [Message.user("go"), reply.as_message(),
               Message("tool", [ToolResult("q2x", "get_file", [Text("b")]),
                                ToolResult("spt7zdfl", "get_file", [Text("a")])])]
    body = build(history)
    assert body["contents"][1]["parts"][2]["thoughtSignature"] == "Ep8H"
    assert [p["functionResponse"]["id"] for p in body["contents"][2]["parts"]] == ["spt7zdfl",
                                                                                   "q2x"]
    check_rules(body)


def test_gemini_25_calls_without_ids_get_local_ids() -> None:
    reply = gemini.parse_response({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "a", "args": {}}}, {"functionCall": {"name": "b"}}]},
        "finishReason": "STOP"}], "responseId": "r9"})
    ids = [c.id for c in reply.tool_calls]
    assert ids == ["plait_r9_0", "plait_r9_1"]


def test_text_signature_is_replayed_on_its_part() -> None:
    reply = gemini.parse_response({"candidates": [{"content": {"role": "model", "parts": [
        {"text": "Answer.", "thoughtSignature": "SIG"}]}, "finishReason": "STOP"}]})
    body = build([Message.user("q"), reply.as_message(), Message.user("more")])
    assert body["contents"][1]["parts"] == [{"text": "Answer.", "thoughtSignature": "SIG"}]


def test_blocked_prompt_and_errors() -> None:
    blocked = gemini.parse_response({"promptFeedback": {"blockReason": "SAFETY"}})
    assert blocked.finish_reason == "content_filter" and blocked.parts == []
    with pytest.raises(RateLimited):
        gemini.parse_response({"error": {"code": 429, "message": "quota",
                                         "status": "RESOURCE_EXHAUSTED"}})
    with pytest.raises(ProviderError, match="INVALID_ARGUMENT"):
        gemini.parse_response({"error": {"code": 400, "message": "bad",
                                         "status": "INVALID_ARGUMENT"}})


def _sse(*chunks: dict[str, Any]) -> bytes:
    # Gemini's alt=sse stream uses data-only events separated by CRLF blank lines.
    return "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks).encode()


STREAM = _sse(
    {"candidates": [{"content": {"role": "model", "parts": [
        {"text": "Considering…", "thought": True}]}, "index": 0}],
     "usageMetadata": {"promptTokenCount": 10}, "modelVersion": "gemini-3-flash",
     "responseId": "r-1"},
    {"candidates": [{"content": {"role": "model", "parts": [{"text": "The wea"}]}, "index": 0}],
     "modelVersion": "gemini-3-flash", "responseId": "r-1"},
    {"candidates": [{"content": {"role": "model", "parts": [{"text": "ther:"}]}, "index": 0}],
     "modelVersion": "gemini-3-flash", "responseId": "r-1"},
    {"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"id": "fc9", "name": "get_weather", "args": {"city": "Zürich"}},
         "thoughtSignature": "CiQB"}]},
        "finishReason": "STOP", "index": 0}],
     "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 7,
                       "thoughtsTokenCount": 3},
     "modelVersion": "gemini-3-flash", "responseId": "r-1"},
)

EXPECTED = [
    ReasoningDelta("Considering…"),
    TextDelta("The wea"),
    TextDelta("ther:"),
    ToolCallStart(0, "fc9", "get_weather", "CiQB"),
    ToolCallDelta(0, '{"city": "Zürich"}'),
    ToolCallEnd(0),
    UsageDelta(Usage(10, 10, reasoning_tokens=3)),
    FinishDelta("tool_calls", "r-1", "gemini-3-flash"),
]


def test_stream_parses_the_documented_chunks() -> None:
    assert collect(gemini.parse_stream(aiter_chunks([STREAM]))) == EXPECTED


def test_stream_survives_every_split() -> None:
    for chunks in every_split(STREAM):
        assert collect(gemini.parse_stream(aiter_chunks(chunks))) == EXPECTED


def test_stream_without_finish_reason_is_interrupted() -> None:
    cut = STREAM[:STREAM.rindex(b"data: ")]
    with pytest.raises(StreamInterrupted):
        collect(gemini.parse_stream(aiter_chunks([cut])))
    error = _sse({"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}})
    with pytest.raises(ProviderError) as info:
        collect(gemini.parse_stream(aiter_chunks([error])))
    assert info.value.status == 503
