"""Captured messages follow the GenAI JSON schema and never carry bytes or base64."""

from __future__ import annotations

import base64
import json

from plait import (
    ContentHandle,
    ContentKind,
    Document,
    Image,
    Message,
    ModelReply,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)
from plait.telemetry._capture import (
    capture_enabled,
    input_messages_json,
    output_messages_json,
    tool_arguments_json,
    tool_result_json,
)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
B64 = base64.b64encode(PNG).decode()
HANDLE = ContentHandle("h_abcdefghijklmnopqrstuvwxyz", ContentKind.IMAGE, "image/png", 4096,
                       "chart.png")


def test_capture_is_off_unless_asked() -> None:
    assert capture_enabled(None, {}) is False
    assert capture_enabled(None, {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
    assert capture_enabled(None, {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "no"}) \
        is False
    assert capture_enabled(False, {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}) \
        is False


def test_input_messages_schema_with_media_as_references() -> None:
    messages = [
        Message.user("What is in these?", Image.from_bytes(PNG, "image/png"),
                     Image.from_handle(HANDLE),
                     Image.from_url("https://cdn.example/a.png?X-Amz-Signature=abc&x=1")),
        Message.assistant(Reasoning("thinking", signature="sig-opaque", data="ENCRYPTED"),
                          ToolCall("call_1", "describe", '{"image": "h_abc", "api_key": "k"}')),
        Message("tool", [ToolResult("call_1", "describe",
                                    [Text("a chart"),
                                     Document.from_bytes(PNG, "application/pdf")])]),
    ]
    text = input_messages_json(messages)
    assert B64 not in text and "PNG" not in text and "X-Amz-Signature" not in text
    assert "sig-opaque" not in text and "ENCRYPTED" not in text
    data = json.loads(text)
    user, assistant, tool = data
    assert user["role"] == "user"
    assert user["parts"][0] == {"type": "text", "content": "What is in these?"}
    inline = user["parts"][1]
    assert inline["type"] == "blob" and inline["content"] is None
    assert inline["mime_type"] == "image/png" and inline["byte_size"] == len(PNG)
    assert inline["modality"] == "image"
    handle = user["parts"][2]
    assert handle["type"] == "file" and handle["file_id"] == HANDLE.id
    assert handle["byte_size"] == 4096 and handle["mime_type"] == "image/png"
    assert user["parts"][3] == {"type": "uri", "modality": "image", "mime_type": None,
                                "uri": "https://cdn.example/a.png"}
    assert assistant["parts"][0] == {"type": "reasoning", "content": "thinking"}
    call = assistant["parts"][1]
    assert call["type"] == "tool_call" and call["id"] == "call_1" and call["name"] == "describe"
    assert call["arguments"] == {"image": "h_abc", "api_key": "[REDACTED]"}
    response = tool["parts"][0]
    assert response["type"] == "tool_call_response" and response["id"] == "call_1"
    assert response["response"][0] == {"type": "text", "content": "a chart"}
    assert response["response"][1]["modality"] == "application/pdf"  # v1.41: no "document"


def test_latest_semconv_uses_document_modality() -> None:
    msg = Message.user(Document.from_bytes(b"%PDF-1.7", "application/pdf"))
    assert json.loads(input_messages_json([msg], latest=True))[0]["parts"][0]["modality"] \
        == "document"


def test_output_messages_and_finish_reason_mapping() -> None:
    reply = ModelReply(parts=[Text("hi"), ToolCall("c9", "search", "not json")],
                       usage=Usage(3, 4), finish_reason="tool_use")
    (out,) = json.loads(output_messages_json(reply))
    assert out["role"] == "assistant" and out["finish_reason"] == "tool_call"
    assert out["parts"][1]["arguments"] == "not json"


def test_tool_arguments_and_results() -> None:
    call = ToolCall("c1", "fetch", '{"url": "https://x.example/?key=AIzaSy0000000000000000000000000000000"}')
    assert "AIza" not in tool_arguments_json(call)
    result = ToolResult("c1", "fetch", [Text("ok")])
    assert json.loads(tool_result_json(result)) == "ok"
    media = ToolResult("c1", "fetch", [Image.from_bytes(PNG, "image/png")])
    assert B64 not in tool_result_json(media)
    assert json.loads(tool_result_json(media))[0]["byte_size"] == len(PNG)
