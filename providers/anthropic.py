"""Anthropic Messages API (``POST /v1/messages``): request building, reply and stream parsing.

Media returned by tools go **inside** ``tool_result.content`` as image and document blocks; audio
and video, which Claude does not take, become a text note (see ``_placement``). Every user turn
that answers tool calls starts with its ``tool_result`` blocks, one per ``tool_use``, in call
order: the API rejects anything else ("Messages following tool_use blocks must begin with a
matching number of tool_result blocks").

``request_headers(request)`` adds ``anthropic-beta: files-api-…`` when a file-id source is
present (the Files API is still a beta on ``/v1/messages``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any

from plait import (
    Audio,
    AuthenticationError,
    ContentRejected,
    ContextLengthExceeded,
    Document,
    FinishDelta,
    Image,
    InlineSource,
    LocalPathSource,
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
    Video,
)

from ._body import MediaEncoder
from ._capabilities import DOCUMENT, IMAGE, MB, Capabilities, CapabilityTable
from ._placement import place_media
from ._registry import ProviderSpec, header_auth, register
from ._schema import wire_parameters
from ._sse import iter_sse
from ._turns import pair_tool_results

__all__ = [
    "CAPABILITIES",
    "FILES_BETA",
    "PROVIDER",
    "SPEC",
    "build_request",
    "parse_error",
    "parse_response",
    "parse_stream",
    "request_headers",
]

PROVIDER = "anthropic"
API_VERSION = "2023-06-01"
FILES_BETA = "files-api-2025-04-14"
"""The ``anthropic-beta`` value that file-id sources need (sent whenever one is present)."""

_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
# Base64 documents are PDFs; any text/* document goes as a plain-text source.
_PDF = "application/pdf"

_CLAUDE = Capabilities(
    provider=PROVIDER,
    family="claude",
    tool_result_kinds=frozenset({IMAGE, DOCUMENT}),
    user_kinds=frozenset({IMAGE, DOCUMENT}),
    mime_types={IMAGE: _IMAGE_TYPES},
    # "image exceeds 5 MB maximum: N bytes > 5242880 bytes" is measured on the base64 text,
    # so the raw limit is 3/4 of it. PDFs: 32 MB, the same as the whole request body.
    max_item_bytes={IMAGE: 5 * MB * 3 // 4, DOCUMENT: 32 * MB * 3 // 4},
    max_items_per_kind={IMAGE: 100},
    max_request_bytes=32 * MB,
    url_kinds=frozenset({IMAGE, DOCUMENT}),
    file_provider=PROVIDER,
    file_id_kinds=frozenset({IMAGE, DOCUMENT}),
)

CAPABILITIES = CapabilityTable(
    PROVIDER,
    [
        # Claude 3 Haiku has no PDF support; everything newer reads PDFs and images.
        ("claude-3-haiku*", _CLAUDE.with_(family="claude-3-haiku", user_kinds=frozenset({IMAGE}),
                                          tool_result_kinds=frozenset({IMAGE}))),
        ("claude-*", _CLAUDE),
    ],
    _CLAUDE.with_(family="*"),
)

# Models whose output cap is 4096 tokens; everything else gets 8192 unless the caller says.
_SMALL_OUTPUT = ("claude-3-haiku", "claude-3-opus", "claude-3-sonnet")

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "pause_turn": "pause_turn",
    "model_context_window_exceeded": "length",
}


# --- request ------------------------------------------------------------------------------------


def build_request(request: ModelRequest, *, caps: Capabilities | None = None,
                  media: MediaEncoder | None = None) -> dict[str, Any]:
    """The ``/v1/messages`` JSON body for ``request`` (media encoded by ``media``).

    :raises ConversationError: a tool call is unanswered, answered twice, or answered out of turn.
    :raises ContentRejected: a part cannot be expressed (unresolved handle, foreign file id,
        image MIME type outside jpeg/png/gif/webp, a non-PDF, non-text document).
    """
    caps = caps or CAPABILITIES.lookup(request.model)
    media = media or MediaEncoder()
    messages = place_media(pair_tool_results(request.messages), caps)
    system: list[str] = [request.system] if request.system else []
    wire: list[dict[str, Any]] = []
    # A user turn is assembled from consecutive tool and user messages: results first.
    results: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []

    def flush_user() -> None:
        if results or others:
            wire.append({"role": "user", "content": [*results, *others]})
        results.clear()
        others.clear()

    for message in messages:
        if message.role == "system":
            if message.text:
                system.append(message.text)
            continue
        if message.role == "assistant":
            flush_user()
            blocks = [b for p in message.parts if (b := _assistant_block(p)) is not None]
            if not blocks:
                continue
            if wire and wire[-1]["role"] == "assistant":
                wire[-1]["content"].extend(blocks)
            else:
                wire.append({"role": "assistant", "content": blocks})
            continue
        for part in message.parts:
            if isinstance(part, ToolResult):
                results.append(_tool_result(part, media))
            elif (block := _user_block(part, media)) is not None:
                others.append(block)
    flush_user()

    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.options.max_tokens or _default_max_tokens(request.model),
        "messages": wire,
    }
    if system:
        body["system"] = "\n\n".join(system)
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": wire_parameters(t.parameters)}
            for t in request.tools
        ]
    if request.tool_choice and request.tools:
        body["tool_choice"] = _tool_choice(request.tool_choice)
    options = request.options
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.top_p is not None:
        body["top_p"] = options.top_p
    if options.stop:
        body["stop_sequences"] = list(options.stop)
    if options.reasoning_effort:
        body["output_config"] = {"effort": options.reasoning_effort}
    if request.stream:
        body["stream"] = True
    if options.extra:
        body.update(options.extra)
    return body


def request_headers(request: ModelRequest) -> dict[str, str]:
    """Headers this request needs beyond auth: ``anthropic-beta`` when a file id is sent."""
    for message in request.messages:
        for part in message.parts:
            parts = part.output if isinstance(part, ToolResult) else [part]
            for item in parts:
                src = getattr(item, "source", None)
                if isinstance(src, ProviderFileSource) and src.provider == PROVIDER:
                    return {"anthropic-beta": FILES_BETA}
    return {}


def _default_max_tokens(model: str) -> int:
    return 4096 if model.startswith(_SMALL_OUTPUT) else 8192


def _tool_choice(choice: str) -> dict[str, Any]:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    return {"type": "tool", "name": choice}


def _assistant_block(part: MessagePart) -> dict[str, Any] | None:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, ToolCall):
        return {"type": "tool_use", "id": part.id, "name": part.name,
                "input": _arguments(part.arguments)}
    if isinstance(part, Reasoning):
        # Only Anthropic's own thinking can be replayed; others' reasoning is not evidence the
        # API can verify, and sending it as text would put words in the model's mouth.
        if part.provider != PROVIDER:
            return None
        if part.data is not None and part.signature is None:
            return {"type": "redacted_thinking", "data": part.data}
        if part.signature is not None:
            return {"type": "thinking", "thinking": part.text, "signature": part.signature}
        return None
    raise ContentRejected(f"an assistant message cannot hold {type(part).__name__} for Anthropic",
                          provider=PROVIDER, part=type(part).__name__)


def _arguments(arguments: str) -> dict[str, Any]:
    """Tool input as an object; malformed model output is kept verbatim rather than lost."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"_raw_arguments": arguments}


def _tool_result(result: ToolResult, media: MediaEncoder) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.call_id}
    if result.raw is not None and result.raw.provider == PROVIDER:
        block["content"] = result.raw.value
    else:
        content = [b for p in result.output if (b := _user_block(p, media)) is not None]
        if content:
            block["content"] = content
    if result.is_error:
        block["is_error"] = True
    return block


def _user_block(part: MessagePart, media: MediaEncoder) -> dict[str, Any] | None:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, Image):
        return {"type": "image", "source": _image_source(part, media)}
    if isinstance(part, Document):
        block: dict[str, Any] = {"type": "document", "source": _document_source(part, media)}
        if part.name:
            block["title"] = part.name
        return block
    if isinstance(part, Audio | Video):
        # place_media has already turned these into notes; reaching here is a bug upstream.
        raise ContentRejected(f"Anthropic takes no {part.kind} content", provider=PROVIDER,
                              part=part.name or str(part.kind))
    raise ContentRejected(f"a user message cannot hold {type(part).__name__} for Anthropic",
                          provider=PROVIDER, part=type(part).__name__)


def _image_source(part: Image, media: MediaEncoder) -> dict[str, Any]:
    source = _source(part)
    if isinstance(source, UrlSource):
        return {"type": "url", "url": source.url}
    if isinstance(source, ProviderFileSource):
        return {"type": "file", "file_id": source.file_id}
    mime = part.media_type
    if mime not in _IMAGE_TYPES:
        raise ContentRejected(
            f"Anthropic takes images as jpeg, png, gif or webp, not {mime or 'unknown type'}",
            provider=PROVIDER, part=part.name, limit="image/jpeg|png|gif|webp")
    return {"type": "base64", "media_type": mime, "data": media.base64(part)}


def _document_source(part: Document, media: MediaEncoder) -> dict[str, Any]:
    source = _source(part)
    if isinstance(source, ProviderFileSource):
        return {"type": "file", "file_id": source.file_id}
    mime = (part.media_type or "").split(";", 1)[0].strip().lower()
    if isinstance(source, UrlSource):
        if mime and mime != _PDF:
            raise ContentRejected(f"Anthropic fetches only PDF documents by URL, not {mime}",
                                  provider=PROVIDER, part=part.name, limit=_PDF)
        return {"type": "url", "url": source.url}
    if mime == _PDF:
        return {"type": "base64", "media_type": _PDF, "data": media.base64(part)}
    if mime.startswith("text/") or mime in ("application/json", "application/xml"):
        raw = _raw_bytes(part)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ContentRejected("a text document is not valid UTF-8", provider=PROVIDER,
                                  part=part.name) from None
        return {"type": "text", "media_type": "text/plain", "data": text}
    raise ContentRejected(
        f"Anthropic takes documents as PDF or plain text, not {mime or 'unknown type'}",
        provider=PROVIDER, part=part.name, limit="application/pdf|text/*")


def _source(part: Image | Document) -> UrlSource | ProviderFileSource | None:
    """The part's URL or Anthropic file id; ``None`` when its bytes are inline (or local)."""
    source = part.source
    if source is None:
        raise ContentRejected(f"{part.kind} part has a handle but no source: resolve it first",
                              provider=PROVIDER, part=part.name, limit="resolved source")
    if isinstance(source, ProviderFileSource):
        if source.provider != PROVIDER:
            raise ContentRejected(f"a {source.provider} file id cannot be sent to Anthropic: "
                                  "rehost it first", provider=PROVIDER, part=part.name,
                                  limit="anthropic file ids")
        return source
    return source if isinstance(source, UrlSource) else None


def _raw_bytes(part: Document) -> bytes:
    """A text document's bytes (plain-text sources carry text, not base64)."""
    source = part.source
    if isinstance(source, InlineSource):
        return source.data
    if isinstance(source, LocalPathSource):
        with open(source.path, "rb") as fh:
            return fh.read()
    raise ContentRejected("a text document needs inline bytes", provider=PROVIDER,
                          part=part.name, limit="inline text document")


SPEC = ProviderSpec(
    name=PROVIDER,
    wire=__name__,
    base_url="https://api.anthropic.com",
    env_keys=("ANTHROPIC_API_KEY",),
    auth=header_auth("x-api-key"),
    path="/v1/messages",
    headers={"anthropic-version": API_VERSION},
    description="Anthropic Messages API (media inside tool_result)",
)
register(SPEC)


# --- reply --------------------------------------------------------------------------------------


def parse_response(data: Mapping[str, Any]) -> ModelReply:
    """A ``/v1/messages`` JSON reply as a ``ModelReply``.

    :raises ProviderError: the body is an error object or not a message.
    """
    if data.get("type") == "error":
        raise _error_from_body(data, status=None)
    if not isinstance(data.get("content"), list):
        raise ProviderError("reply has no content list", provider=PROVIDER)
    parts: list[MessagePart] = []
    for block in data["content"]:
        kind = block.get("type")
        if kind == "text":
            parts.append(Text(block.get("text", "")))
        elif kind == "tool_use":
            parts.append(ToolCall(block["id"], block["name"],
                                  json.dumps(block.get("input") or {}, ensure_ascii=False)))
        elif kind == "thinking":
            parts.append(Reasoning(block.get("thinking", ""), provider=PROVIDER,
                                   signature=block.get("signature")))
        elif kind == "redacted_thinking":
            parts.append(Reasoning(provider=PROVIDER, data=block.get("data")))
    return ModelReply(parts=parts, usage=_usage(data.get("usage") or {}),
                      finish_reason=_finish(data.get("stop_reason")),
                      response_id=data.get("id"), model=data.get("model"))


def _usage(raw: Mapping[str, Any], base: Usage | None = None) -> Usage:
    base = base or Usage()
    return Usage(
        input_tokens=raw.get("input_tokens") or base.input_tokens,
        output_tokens=raw.get("output_tokens") or base.output_tokens,
        cache_read_tokens=raw.get("cache_read_input_tokens") or base.cache_read_tokens,
        cache_write_tokens=raw.get("cache_creation_input_tokens") or base.cache_write_tokens,
    )


def _finish(reason: str | None) -> str | None:
    return None if reason is None else _FINISH.get(reason, reason)


async def parse_stream(chunks: AsyncIterable[bytes]) -> AsyncIterator[StreamDelta]:
    """Translate the Messages SSE stream into ``StreamDelta``s.

    :raises ProviderError: the stream carries an ``error`` event (``overloaded_error``...).
    :raises StreamInterrupted: the stream ends before ``message_stop``.
    """
    usage = Usage()
    response_id: str | None = None
    model: str | None = None
    finish: str | None = None
    # content block index -> tool-call ordinal, for blocks that are tool calls
    tool_index: dict[int, int] = {}
    finished = False
    async with aclosing(iter_sse(chunks)) as events:
        async for event in events:
            if finished:
                continue  # drain to the end so the connection closes cleanly
            if event.event == "ping" or not event.data:
                continue
            data = json.loads(event.data)
            kind = data.get("type", event.event)
            if kind == "message_start":
                message = data.get("message") or {}
                response_id = message.get("id")
                model = message.get("model")
                usage = _usage(message.get("usage") or {})
            elif kind == "content_block_start":
                block = data.get("content_block") or {}
                if block.get("type") == "tool_use":
                    ordinal = len(tool_index)
                    tool_index[data["index"]] = ordinal
                    yield ToolCallStart(ordinal, block["id"], block["name"])
                    if block.get("input"):
                        yield ToolCallDelta(ordinal, json.dumps(block["input"]))
                elif block.get("type") == "text" and block.get("text"):
                    yield TextDelta(block["text"])
                elif block.get("type") == "thinking" and block.get("thinking"):
                    yield ReasoningDelta(block["thinking"])
                elif block.get("type") == "redacted_thinking":
                    yield ReasoningDelta(data=block.get("data"))
            elif kind == "content_block_delta":
                delta = data.get("delta") or {}
                dtype = delta.get("type")
                if dtype == "text_delta":
                    yield TextDelta(delta.get("text", ""))
                elif dtype == "input_json_delta":
                    fragment = delta.get("partial_json", "")
                    if fragment:
                        yield ToolCallDelta(tool_index[data["index"]], fragment)
                elif dtype == "thinking_delta":
                    yield ReasoningDelta(delta.get("thinking", ""))
                elif dtype == "signature_delta":
                    yield ReasoningDelta(signature=delta.get("signature"))
            elif kind == "content_block_stop":
                if data.get("index") in tool_index:
                    yield ToolCallEnd(tool_index[data["index"]])
            elif kind == "message_delta":
                finish = (data.get("delta") or {}).get("stop_reason") or finish
                usage = _usage(data.get("usage") or {}, usage)
            elif kind == "message_stop":
                yield UsageDelta(usage)
                yield FinishDelta(_finish(finish), response_id, model)
                finished = True
            elif kind == "error":
                raise _error_from_body(data, status=None)
    if not finished:
        raise StreamInterrupted("stream ended before message_stop", provider=PROVIDER)


# --- errors -------------------------------------------------------------------------------------


def parse_error(status: int, body: bytes, request_id: str | None = None) -> ProviderError:
    """The typed error for an Anthropic error response (the transport raises it).

    ``overloaded_error`` (HTTP 529) stays a retryable ``ProviderError``; "prompt is too long"
    becomes ``ContextLengthExceeded``.
    """
    try:
        data = json.loads(body)
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    return _error_from_body(data, status=status, request_id=request_id)


def _error_from_body(data: Mapping[str, Any], *, status: int | None,
                     request_id: str | None = None) -> ProviderError:
    error = data.get("error") if isinstance(data.get("error"), dict) else {}
    assert isinstance(error, dict)
    etype = str(error.get("type") or "error")
    message = str(error.get("message") or etype)
    request_id = request_id or data.get("request_id")
    if status is None:
        status = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500,
                  "invalid_request_error": 400, "request_too_large": 413}.get(etype)
    text = f"{etype}: {message}"
    lowered = message.lower()
    if "prompt is too long" in lowered or "context window" in lowered \
            or "context length" in lowered:
        return ContextLengthExceeded(text, provider=PROVIDER, status=status,
                                     request_id=request_id)
    if status == 429 or etype == "rate_limit_error":
        return RateLimited(text, provider=PROVIDER, status=status, request_id=request_id)
    if status in (401, 403) or etype in ("authentication_error", "permission_error"):
        return AuthenticationError(text, provider=PROVIDER, status=status,
                                   request_id=request_id)
    return ProviderError(text, provider=PROVIDER, status=status, request_id=request_id)

