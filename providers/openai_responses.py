"""OpenAI Responses API (``POST /v1/responses``): request building, reply and stream parsing.

Media returned by tools go **inside** ``function_call_output.output`` as ``input_image`` and
``input_file`` items. Audio and video are not accepted there (400 ``unsupported_file``) nor in
user messages of this API, so they become text notes (see ``_placement``). Reasoning models run
stateless (``store: false``) with ``include: ["reasoning.encrypted_content"]``, and each reasoning
item is replayed, encrypted content included, before the function call it led to.

A streamed reasoning item ends with ``ReasoningDelta(id=..., data=encrypted_content)``; the
accumulator must keep both on the ``Reasoning`` for the next turn's replay.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any

from plait import (
    ContentRejected,
    ContextLengthExceeded,
    Document,
    FinishDelta,
    Image,
    MessagePart,
    ModelReply,
    ModelRequest,
    ProviderError,
    ProviderFileSource,
    RateLimited,
    Reasoning,
    ReasoningDelta,
    StreamDelta,
    StreamInterrupted,
    Text,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
    UrlSource,
    Usage,
    UsageDelta,
)

from ._body import MediaEncoder
from ._capabilities import DOCUMENT, IMAGE, MB, Capabilities, CapabilityTable
from ._log import logger
from ._placement import place_media
from ._registry import ProviderSpec, register
from ._schema import wire_parameters
from ._sse import iter_sse
from ._turns import pair_tool_results

__all__ = [
    "CAPABILITIES",
    "PROVIDER",
    "REASONING_MODELS",
    "SPEC",
    "build_request",
    "error_from_event",
    "parse_response",
    "parse_stream",
]

PROVIDER = "openai-responses"
FILE_PROVIDER = "openai"
"""Files uploaded to OpenAI's file store serve Chat Completions and Responses alike."""
_OWN_REASONING = frozenset({PROVIDER, FILE_PROVIDER})

REASONING_MODELS = ("o1*", "o3*", "o4*", "gpt-5*", "codex-*")
"""Model-id globs that reason: run stateless and replay encrypted reasoning."""

_BASE = Capabilities(
    provider=PROVIDER,
    family="vision",
    tool_result_kinds=frozenset({IMAGE, DOCUMENT}),
    user_kinds=frozenset({IMAGE, DOCUMENT}),
    mime_types={IMAGE: frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})},
    max_item_bytes={IMAGE: 50 * MB, DOCUMENT: 50 * MB},
    max_items_per_kind={IMAGE: 500},
    max_request_bytes=50 * MB,
    url_kinds=frozenset({IMAGE, DOCUMENT}),
    file_provider=FILE_PROVIDER,
    file_id_kinds=frozenset({IMAGE, DOCUMENT}),
)

CAPABILITIES = CapabilityTable(
    PROVIDER,
    [
        # Text-only families take neither images nor files.
        ("gpt-3.5*", _BASE.with_(family="text", tool_result_kinds=frozenset(),
                                 user_kinds=frozenset())),
        ("o1-mini*", _BASE.with_(family="text", tool_result_kinds=frozenset(),
                                 user_kinds=frozenset())),
        ("o3-mini*", _BASE.with_(family="text", tool_result_kinds=frozenset(),
                                 user_kinds=frozenset())),
        *((pattern, _BASE.with_(family="reasoning")) for pattern in REASONING_MODELS),
    ],
    _BASE,
)

_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


# --- request ------------------------------------------------------------------------------------


def build_request(request: ModelRequest, *, caps: Capabilities | None = None,
                  media: MediaEncoder | None = None) -> dict[str, Any]:
    """The ``/v1/responses`` JSON body for ``request`` (media encoded by ``media``).

    :raises ConversationError: a tool call is unanswered, answered twice, or answered out of turn.
    :raises ContentRejected: a part cannot be expressed (unresolved handle, foreign file id).
    """
    caps = caps or CAPABILITIES.lookup(request.model)
    media = media or MediaEncoder()
    items: list[dict[str, Any]] = []
    for message in place_media(pair_tool_results(request.messages), caps):
        if message.role == "system":
            if message.text:
                items.append({"role": "system", "content": message.text})
        elif message.role == "assistant":
            _assistant_items(message.parts, items)
        elif message.role == "tool":
            items.extend(_output_item(p, media) for p in message.parts
                         if isinstance(p, ToolResult))
        else:
            content = [c for p in message.parts if (c := _content(p, media, "message"))]
            if content:
                items.append({"role": "user", "content": content})

    body: dict[str, Any] = {"model": request.model, "input": items}
    if request.system:
        body["instructions"] = request.system
    if request.tools:
        body["tools"] = [
            {"type": "function", "name": t.name, "description": t.description,
             "parameters": wire_parameters(t.parameters), "strict": False}
            for t in request.tools
        ]
        if request.tool_choice:
            body["tool_choice"] = (request.tool_choice
                                   if request.tool_choice in ("auto", "none", "required")
                                   else {"type": "function", "name": request.tool_choice})
    options = request.options
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.top_p is not None:
        body["top_p"] = options.top_p
    if options.max_tokens is not None:
        body["max_output_tokens"] = options.max_tokens
    if options.reasoning_effort:
        body["reasoning"] = {"effort": options.reasoning_effort}
    if caps.family == "reasoning":
        body["store"] = False
        body["include"] = ["reasoning.encrypted_content"]
    for name in ("stop", "seed"):
        if getattr(options, name) is not None:
            logger.warning("option_not_supported", provider=PROVIDER, option=name)
    if request.stream:
        body["stream"] = True
    if options.extra:
        body.update(options.extra)
    return body


def _assistant_items(parts: list[MessagePart], items: list[dict[str, Any]]) -> None:
    text: list[str] = []

    def flush_text() -> None:
        if text:
            items.append({"role": "assistant", "content": "".join(text)})
            text.clear()

    for part in parts:
        if isinstance(part, Text):
            text.append(part.text)
            continue
        flush_text()
        if isinstance(part, ToolCall):
            items.append({"type": "function_call", "call_id": part.id, "name": part.name,
                          "arguments": part.arguments or "{}"})
        elif isinstance(part, Reasoning):
            # Replayable only with the item id it came with, and only to OpenAI.
            if part.provider in _OWN_REASONING and part.id:
                item: dict[str, Any] = {
                    "type": "reasoning", "id": part.id,
                    "summary": [{"type": "summary_text", "text": part.text}] if part.text
                    else [],
                }
                if part.data:
                    item["encrypted_content"] = part.data
                items.append(item)
        else:
            raise ContentRejected(
                f"an assistant message cannot hold {type(part).__name__} for OpenAI Responses",
                provider=PROVIDER, part=type(part).__name__)
    flush_text()


def _output_item(result: ToolResult, media: MediaEncoder) -> dict[str, Any]:
    output: str | list[dict[str, Any]] | Any
    if result.raw is not None and result.raw.provider in _OWN_REASONING:
        output = result.raw.value
    elif all(isinstance(p, Text) for p in result.output):
        output = "".join(p.text for p in result.output if isinstance(p, Text))
    else:
        output = [c for p in result.output if (c := _content(p, media, "output"))]
    if result.is_error:
        # The API has no error flag on function output; say it in the text the model reads.
        if isinstance(output, str):
            output = f"[tool error] {output}"
        elif isinstance(output, list):
            output.insert(0, {"type": "input_text", "text": "[tool error]"})
    return {"type": "function_call_output", "call_id": result.call_id, "output": output}


def _content(part: MessagePart, media: MediaEncoder, where: str) -> dict[str, Any] | None:
    """One content item; ``where`` is ``"message"`` (image ``detail`` required) or ``"output"``."""
    if isinstance(part, Text):
        return {"type": "input_text", "text": part.text} if part.text else None
    if isinstance(part, Image):
        item: dict[str, Any] = {"type": "input_image", "detail": "auto"}
        source = _source(part)
        if isinstance(source, ProviderFileSource):
            item["file_id"] = source.file_id
        elif isinstance(source, UrlSource):
            item["image_url"] = source.url
        else:
            item["image_url"] = media.data_url(part)
        return item
    if isinstance(part, Document):
        doc: dict[str, Any] = {"type": "input_file"}
        source = _source(part)
        if isinstance(source, ProviderFileSource):
            doc["file_id"] = source.file_id
        elif isinstance(source, UrlSource):
            doc["file_url"] = source.url
        else:
            doc["file_data"] = media.data_url(part, part.media_type or "application/pdf")
            doc["filename"] = part.name or _default_filename(part)
        return doc
    raise ContentRejected(f"OpenAI Responses takes no {type(part).__name__} here",
                          provider=PROVIDER, part=getattr(part, "name", None) or where)


def _source(part: Image | Document) -> UrlSource | ProviderFileSource | None:
    source = part.source
    if source is None:
        raise ContentRejected(f"{part.kind} part has a handle but no source: resolve it first",
                              provider=PROVIDER, part=part.name, limit="resolved source")
    if isinstance(source, ProviderFileSource):
        if source.provider != FILE_PROVIDER:
            raise ContentRejected(f"a {source.provider} file id cannot be sent to OpenAI: "
                                  "rehost it first", provider=PROVIDER, part=part.name,
                                  limit="openai file ids")
        return source
    return source if isinstance(source, UrlSource) else None


def _default_filename(part: Document) -> str:
    mime = part.media_type or ""
    extension = {"application/pdf": "pdf", "text/plain": "txt", "text/csv": "csv",
                 "text/markdown": "md", "application/json": "json"}.get(mime, "bin")
    return f"document.{extension}"


SPEC = ProviderSpec(
    name=PROVIDER,
    wire=__name__,
    base_url="https://api.openai.com/v1",
    env_keys=("OPENAI_API_KEY",),
    path="/responses",
    description="OpenAI Responses API (media inside function_call_output)",
)
register(SPEC)


# --- reply --------------------------------------------------------------------------------------


def parse_response(data: Mapping[str, Any]) -> ModelReply:
    """A ``/v1/responses`` JSON reply as a ``ModelReply``.

    :raises ProviderError: the response failed (``status: failed``) or is not a response.
    """
    if data.get("status") == "failed" or (data.get("error") and not data.get("output")):
        raise error_from_event(data.get("error") or {}, status=None)
    if not isinstance(data.get("output"), list):
        raise ProviderError("reply has no output list", provider=PROVIDER)
    parts: list[MessagePart] = []
    for item in data["output"]:
        kind = item.get("type")
        if kind == "message":
            for content in item.get("content") or []:
                if content.get("type") == "output_text":
                    parts.append(Text(content.get("text", "")))
                elif content.get("type") == "refusal":
                    parts.append(Text(content.get("refusal", "")))
        elif kind == "function_call":
            parts.append(ToolCall(item["call_id"], item["name"], item.get("arguments") or "{}"))
        elif kind == "reasoning":
            text = "\n\n".join(s.get("text", "") for s in item.get("summary") or [])
            parts.append(Reasoning(text, provider=PROVIDER, data=item.get("encrypted_content"),
                                   id=item.get("id")))
    return ModelReply(parts=parts, usage=_usage(data.get("usage") or {}),
                      finish_reason=_finish(data, parts),
                      response_id=data.get("id"), model=data.get("model"))


def _usage(raw: Mapping[str, Any]) -> Usage:
    inputs = raw.get("input_tokens_details") or {}
    outputs = raw.get("output_tokens_details") or {}
    return Usage(input_tokens=raw.get("input_tokens") or 0,
                 output_tokens=raw.get("output_tokens") or 0,
                 cache_read_tokens=inputs.get("cached_tokens") or 0,
                 reasoning_tokens=outputs.get("reasoning_tokens") or 0)


def _finish(data: Mapping[str, Any], parts: list[MessagePart] | None = None,
            saw_tool_call: bool = False) -> str | None:
    status = data.get("status")
    if status == "incomplete":
        reason = str((data.get("incomplete_details") or {}).get("reason") or "incomplete")
        return _INCOMPLETE.get(reason, reason)
    if status == "completed":
        if saw_tool_call or any(isinstance(p, ToolCall) for p in parts or ()):
            return "tool_calls"
        return "stop"
    return status if isinstance(status, str) else None


async def parse_stream(chunks: AsyncIterable[bytes]) -> AsyncIterator[StreamDelta]:
    """Translate the Responses SSE stream (``response.*`` events) into ``StreamDelta``s.

    :raises ProviderError: ``response.failed`` or an ``error`` event (typed where the code says).
    :raises StreamInterrupted: the stream ends before ``response.completed``/``incomplete``.
    """
    tool_index: dict[int, int] = {}  # output_index -> tool-call ordinal
    finished = False
    async with aclosing(iter_sse(chunks)) as events:
        async for event in events:
            if finished:
                continue  # drain to the end so the connection closes cleanly
            if not event.data or event.data == "[DONE]":
                continue
            data = json.loads(event.data)
            kind = data.get("type", event.event)
            if kind == "response.output_item.added":
                item = data.get("item") or {}
                if item.get("type") == "function_call":
                    ordinal = len(tool_index)
                    tool_index[data["output_index"]] = ordinal
                    yield ToolCallStart(ordinal, item["call_id"], item["name"])
                    if item.get("arguments"):
                        yield ToolCallDelta(ordinal, item["arguments"])
            elif kind in ("response.output_text.delta", "response.refusal.delta"):
                yield TextDelta(data.get("delta", ""))
            elif kind == "response.function_call_arguments.delta":
                if data.get("delta"):
                    yield ToolCallDelta(tool_index[data["output_index"]], data["delta"])
            elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
                yield ReasoningDelta(data.get("delta", ""))
            elif kind == "response.output_item.done":
                item = data.get("item") or {}
                if data.get("output_index") in tool_index:
                    yield ToolCallEnd(tool_index[data["output_index"]])
                elif item.get("type") == "reasoning":
                    # The item id and encrypted content arrive only now; replay needs both.
                    yield ReasoningDelta(id=item.get("id"), data=item.get("encrypted_content"))
            elif kind in ("response.completed", "response.incomplete"):
                response = data.get("response") or {}
                yield UsageDelta(_usage(response.get("usage") or {}))
                yield FinishDelta(_finish(response, saw_tool_call=bool(tool_index)),
                                  response.get("id"), response.get("model"))
                finished = True
            elif kind == "response.failed":
                raise error_from_event((data.get("response") or {}).get("error") or {}, status=None)
            elif kind == "error":
                raise error_from_event(data, status=None)
    if not finished:
        raise StreamInterrupted("stream ended before response.completed", provider=PROVIDER)


def error_from_event(error: Mapping[str, Any], *, status: int | None) -> ProviderError:
    """The typed error for an error object of a failed response or an ``error`` stream event."""
    code = str(error.get("code") or error.get("type") or "error")
    text = f"{code}: {error.get('message') or code}"
    if code == "context_length_exceeded":
        return ContextLengthExceeded(text, provider=PROVIDER, status=status or 400)
    if code in ("rate_limit_exceeded", "rate_limit_error"):
        return RateLimited(text, provider=PROVIDER, status=status or 429)
    return ProviderError(text, provider=PROVIDER, status=status)

