"""Converting plait messages to the GenAI conventions' JSON message schema, without bytes.

Content capture is opt-in. When on, ``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.system_instructions`` and tool arguments/results are recorded as JSON strings in the
schema the conventions define. Media never appear as bytes or base64: a part backed by a content
handle is a ``file`` reference to the handle id (with MIME type and size); inline bytes become a
``blob`` placeholder with MIME type and size only; URLs lose their query string (presigned links
carry credentials); every text goes through secret redaction.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import msgspec

from .._content import InlineSource, LocalPathSource, ProviderFileSource, UrlSource
from .._messages import Message, ModelReply, Reasoning, ToolCall, ToolResult, ToolSpec
from .._parts import MediaPart, Text
from ._redact import redact, redact_text

__all__ = [
    "CAPTURE_ENV",
    "capture_enabled",
    "input_messages_json",
    "output_messages_json",
    "system_instructions_json",
    "tool_arguments_json",
    "tool_definitions_json",
    "tool_result_json",
]

CAPTURE_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_TRUE: Final = frozenset({"1", "true", "yes", "on", "span_only", "span_and_event"})

# The spec's finish_reason enum; provider spellings map onto it, anything else passes through.
_FINISH: Final[dict[str, str]] = {
    "stop": "stop", "end_turn": "stop", "stop_sequence": "stop", "completed": "stop",
    "length": "length", "max_tokens": "length", "max_output_tokens": "length",
    "tool_calls": "tool_call", "tool_use": "tool_call", "tool_call": "tool_call",
    "function_call": "tool_call", "content_filter": "content_filter", "safety": "content_filter",
    "refusal": "content_filter", "recitation": "content_filter", "error": "error",
}

_json = msgspec.json.Encoder()


def capture_enabled(explicit: bool | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to record message content: ``explicit`` wins, else the environment (default off)."""
    if explicit is not None:
        return explicit
    value = (environ if environ is not None else os.environ).get(CAPTURE_ENV, "")
    return value.strip().lower() in _TRUE


def _modality(part: MediaPart, *, latest: bool) -> str:
    kind = str(part.kind)
    if kind in ("image", "audio", "video"):
        return kind
    # "document" joined the modality enum after v1.41; before it, the MIME type stands in.
    return "document" if latest else (part.media_type or "document")


def _safe_uri(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return "[unparseable url]"
    if parts.scheme == "data":
        return "data:[inline data omitted]"
    # Query strings and user info carry signatures and tokens; the path names the object.
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return redact_text(urlunsplit((parts.scheme, host, parts.path, "", "")))


def _media(part: MediaPart, *, latest: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"modality": _modality(part, latest=latest), "mime_type": part.media_type}
    size = part.byte_size
    if part.handle is not None:
        # The handle id is what the model and the tools see: reference it, never the bytes.
        out.update(type="file", file_id=part.handle.id, handle_id=part.handle.id)
    elif isinstance(part.source, ProviderFileSource):
        out.update(type="file", file_id=part.source.file_id)
    elif isinstance(part.source, UrlSource):
        out.update(type="uri", uri=_safe_uri(part.source.url))
    elif isinstance(part.source, LocalPathSource):
        out.update(type="file", file_id=os.path.basename(part.source.path))
    elif isinstance(part.source, InlineSource):
        # The conventions would put base64 in "content"; plait records the fact, not the bytes.
        out.update(type="blob", content=None, omitted="inline bytes not recorded")
    else:
        out.update(type="file", file_id=None)
    if size is not None:
        out["byte_size"] = size
    if part.name:
        out["name"] = redact_text(part.name)
    return out


def _arguments(text: str) -> Any:
    try:
        return redact(msgspec.json.decode(text))
    except msgspec.DecodeError:
        return redact_text(text)


def _result(result: ToolResult, *, latest: bool) -> Any:
    if all(isinstance(p, Text) for p in result.output):
        return redact_text("".join(p.text for p in result.output if isinstance(p, Text)))
    return [_part(p, latest=latest) for p in result.output]


def _part(part: object, *, latest: bool) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "content": redact_text(part.text)}
    if isinstance(part, MediaPart):
        return _media(part, latest=latest)
    if isinstance(part, ToolCall):
        return {"type": "tool_call", "id": part.id, "name": part.name,
                "arguments": _arguments(part.arguments)}
    if isinstance(part, ToolResult):
        out = {"type": "tool_call_response", "id": part.call_id,
               "response": _result(part, latest=latest)}
        if part.is_error:
            out["is_error"] = True
        return out
    if isinstance(part, Reasoning):
        # Signatures and encrypted reasoning are opaque provider tokens: never recorded.
        return {"type": "reasoning", "content": redact_text(part.text)}
    return {"type": type(part).__name__.lower()}


def _message(message: Message, *, latest: bool) -> dict[str, Any]:
    return {"role": message.role, "parts": [_part(p, latest=latest) for p in message.parts]}


def input_messages_json(messages: Iterable[Message], *, latest: bool = False) -> str:
    """``gen_ai.input.messages`` for a request's history, as a JSON string."""
    return _json.encode([_message(m, latest=latest) for m in messages]).decode()


def output_messages_json(reply: ModelReply, *, latest: bool = False) -> str:
    """``gen_ai.output.messages`` for a model reply, as a JSON string."""
    reason = reply.finish_reason or ("tool_call" if reply.tool_calls else "stop")
    return _json.encode([{
        "role": "assistant",
        "parts": [_part(p, latest=latest) for p in reply.parts],
        "finish_reason": _FINISH.get(reason.lower(), reason.lower()),
    }]).decode()


def system_instructions_json(system: str) -> str:
    """``gen_ai.system_instructions`` for a system prompt, as a JSON string."""
    return _json.encode([{"type": "text", "content": redact_text(system)}]).decode()


def tool_definitions_json(tools: Iterable[ToolSpec]) -> str:
    """``gen_ai.tool.definitions`` for the tools offered to the model, as a JSON string."""
    return _json.encode([
        {"type": "function", "name": t.name, "description": t.description,
         "parameters": t.parameters}
        for t in tools
    ]).decode()


def tool_arguments_json(call: ToolCall) -> str:
    """``gen_ai.tool.call.arguments`` for a tool call, as a JSON string (secrets redacted)."""
    return _json.encode(_arguments(call.arguments)).decode()


def tool_result_json(result: ToolResult, *, latest: bool = False) -> str:
    """``gen_ai.tool.call.result`` for a tool result, as a JSON string (media as references)."""
    return _json.encode(_result(result, latest=latest)).decode()


def finish_reason(reason: str | None) -> str | None:
    """A provider's finish reason in the conventions' vocabulary (unknown ones lower-cased)."""
    return None if reason is None else _FINISH.get(reason.lower(), reason.lower())
