"""Google Gemini ``generateContent`` / ``streamGenerateContent?alt=sse``: requests and replies.

Where media returned by tools go depends on the family:

- **Gemini 3** carries images and documents inside ``functionResponse.parts`` (``inlineData`` /
  ``fileData``); the result's text goes in ``functionResponse.response.output`` (``error`` for a
  failed call) because a function-response part cannot hold text. Audio and video move to a
  follow-up user Content.
- **Gemini 2.5 and older** take no media in a function response: ``_placement`` leaves a
  placeholder in the result and sends the media in one user Content after the batch.

Every tool batch is answered by one user Content holding exactly as many ``functionResponse``
parts as the model turn had ``functionCall`` parts, in call order. ``functionCall.id`` and the
``thoughtSignature`` are echoed exactly as they came. Gemini 2.5 returns calls without an id; such
calls get a local id (``plait_…``) that is never sent back.

Gemini 3 documents multimodal function responses for image/png, image/jpeg, image/webp,
application/pdf and text/plain only; other types of those kinds go to the follow-up Content.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any

from plait import (
    Audio,
    ContentRejected,
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
    Video,
)

from ._body import MediaEncoder
from ._capabilities import AUDIO, DOCUMENT, IMAGE, MB, VIDEO, Capabilities, CapabilityTable
from ._placement import place_media
from ._registry import ProviderSpec, header_auth, register
from ._schema import wire_parameters
from ._sse import iter_sse
from ._turns import pair_tool_results

__all__ = [
    "CAPABILITIES",
    "FILES_BASE",
    "LOCAL_ID_PREFIX",
    "PROVIDER",
    "SPEC",
    "build_request",
    "parse_response",
    "parse_stream",
]

PROVIDER = "gemini"
FILES_BASE = "https://generativelanguage.googleapis.com/v1beta/"
"""Prefix that turns a Files API name (``files/abc``) into the ``fileUri`` the API expects."""
LOCAL_ID_PREFIX = "plait_"
"""Ids plait makes up for calls the API returned without one; never sent back."""

_ALL = frozenset({IMAGE, AUDIO, VIDEO, DOCUMENT})
_GEMINI_25 = Capabilities(
    provider=PROVIDER,
    family="gemini-2.5",
    tool_result_kinds=frozenset(),
    user_kinds=_ALL,
    mime_types={IMAGE: frozenset({"image/png", "image/jpeg", "image/webp", "image/heic",
                                  "image/heif"})},
    # The inline limit has been 20 MB for the whole request (newer docs say 100 MB); above it
    # the Files API is the way (preflight's uploader).
    max_request_bytes=20 * MB,
    max_items=3000,
    url_kinds=_ALL,
    file_provider=PROVIDER,
    file_id_kinds=_ALL,
)
_GEMINI_3 = _GEMINI_25.with_(
    family="gemini-3",
    tool_result_kinds=frozenset({IMAGE, DOCUMENT}),
    tool_result_mime_types={IMAGE: frozenset({"image/png", "image/jpeg", "image/webp"}),
                            DOCUMENT: frozenset({"application/pdf", "text/plain"})},
)

CAPABILITIES = CapabilityTable(
    PROVIDER,
    [("gemini-3*", _GEMINI_3), ("gemini-2*", _GEMINI_25), ("gemini-1*", _GEMINI_25)],
    _GEMINI_25.with_(family="*"),
)

_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
}
_THINKING_BUDGET = {"minimal": 512, "low": 1024, "medium": 8192, "high": 24576}


# --- request ------------------------------------------------------------------------------------


def build_request(request: ModelRequest, *, caps: Capabilities | None = None,
                  media: MediaEncoder | None = None) -> dict[str, Any]:
    """The ``generateContent`` JSON body for ``request`` (the model goes in the URL).

    :raises ConversationError: a tool call is unanswered, answered twice, or answered out of turn.
    :raises ContentRejected: a part cannot be expressed (unresolved handle, foreign file id).
    """
    caps = caps or CAPABILITIES.lookup(request.model)
    media = media or MediaEncoder()
    system: list[str] = [request.system] if request.system else []
    contents: list[dict[str, Any]] = []
    responses: list[dict[str, Any]] = []

    def flush_responses() -> None:
        if responses:
            contents.append({"role": "user", "parts": list(responses)})
            responses.clear()

    for message in place_media(pair_tool_results(request.messages), caps):
        if message.role == "tool":
            responses.extend(_function_response(p, media) for p in message.parts
                             if isinstance(p, ToolResult))
            continue
        flush_responses()
        if message.role == "system":
            if message.text:
                system.append(message.text)
        elif message.role == "assistant":
            parts = _model_parts(message.parts, media)
            if parts:
                contents.append({"role": "model", "parts": parts})
        else:
            parts = [p for part in message.parts if (p := _user_part(part, media))]
            if parts:
                contents.append({"role": "user", "parts": parts})
    flush_responses()

    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    if request.tools:
        body["tools"] = [{"functionDeclarations": [
            {"name": t.name, "description": t.description,
             "parametersJsonSchema": wire_parameters(t.parameters)}
            for t in request.tools
        ]}]
        if request.tool_choice:
            body["toolConfig"] = {"functionCallingConfig": _tool_choice(request.tool_choice)}
    config = _generation_config(request, caps)
    if config:
        body["generationConfig"] = config
    if request.options.extra:
        body.update(request.options.extra)
    return body


def _tool_choice(choice: str) -> dict[str, Any]:
    if choice in ("auto", "none"):
        return {"mode": choice.upper()}
    if choice == "required":
        return {"mode": "ANY"}
    return {"mode": "ANY", "allowedFunctionNames": [choice]}


def _generation_config(request: ModelRequest, caps: Capabilities) -> dict[str, Any]:
    options = request.options
    config: dict[str, Any] = {}
    if options.temperature is not None:
        config["temperature"] = options.temperature
    if options.top_p is not None:
        config["topP"] = options.top_p
    if options.max_tokens is not None:
        config["maxOutputTokens"] = options.max_tokens
    if options.stop:
        config["stopSequences"] = list(options.stop)
    if options.seed is not None:
        config["seed"] = options.seed
    if options.reasoning_effort:
        if caps.family == "gemini-3":
            config["thinkingConfig"] = {"thinkingLevel": options.reasoning_effort}
        else:
            budget = _THINKING_BUDGET.get(options.reasoning_effort, 8192)
            config["thinkingConfig"] = {"thinkingBudget": budget}
    return config


def _model_parts(parts: list[MessagePart], media: MediaEncoder) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    signature: str | None = None  # a bare signature attaches to the part that follows it
    for part in parts:
        wire: dict[str, Any] | None
        if isinstance(part, Reasoning):
            if part.provider != PROVIDER:
                continue
            if not part.text:
                signature = part.signature or signature
                continue
            wire = {"text": part.text, "thought": True}
            if part.signature:
                wire["thoughtSignature"] = part.signature
        elif isinstance(part, ToolCall):
            call: dict[str, Any] = {"name": part.name, "args": _arguments(part.arguments)}
            if not part.id.startswith(LOCAL_ID_PREFIX):
                call["id"] = part.id
            wire = {"functionCall": call}
            if part.signature:
                wire["thoughtSignature"] = part.signature
        else:
            wire = _user_part(part, media)
        if wire is None:
            continue
        if signature and "thoughtSignature" not in wire:
            wire["thoughtSignature"] = signature
        signature = None
        out.append(wire)
    return out


def _arguments(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"_raw_arguments": arguments}


def _function_response(result: ToolResult, media: MediaEncoder) -> dict[str, Any]:
    response: dict[str, Any] = {"name": result.name}
    if not result.call_id.startswith(LOCAL_ID_PREFIX):
        response["id"] = result.call_id
    if result.raw is not None and result.raw.provider == PROVIDER:
        response["response"] = result.raw.value
        return {"functionResponse": response}
    text = "\n".join(p.text for p in result.output if isinstance(p, Text))
    response["response"] = {"error" if result.is_error else "output": text}
    parts = [_media(p, media) for p in result.output if isinstance(p, Image | Document
                                                                     | Audio | Video)]
    if parts:
        response["parts"] = parts
    return {"functionResponse": response}


def _user_part(part: MessagePart, media: MediaEncoder) -> dict[str, Any] | None:
    if isinstance(part, Text):
        return {"text": part.text} if part.text else None
    if isinstance(part, Image | Audio | Video | Document):
        return _media(part, media)
    raise ContentRejected(f"a user message cannot hold {type(part).__name__} for Gemini",
                          provider=PROVIDER, part=type(part).__name__)


def _media(part: Image | Audio | Video | Document, media: MediaEncoder) -> dict[str, Any]:
    source = part.source
    mime = part.media_type
    if source is None:
        raise ContentRejected(f"{part.kind} part has a handle but no source: resolve it first",
                              provider=PROVIDER, part=part.name, limit="resolved source")
    if not mime:
        raise ContentRejected(f"{part.kind} part has no MIME type; Gemini needs one",
                              provider=PROVIDER, part=part.name, limit="mimeType")
    if isinstance(source, ProviderFileSource):
        if source.provider != PROVIDER:
            raise ContentRejected(f"a {source.provider} file id cannot be sent to Gemini: "
                                  "rehost it first", provider=PROVIDER, part=part.name,
                                  limit="gemini file ids")
        uri = source.uri or (source.file_id if "://" in source.file_id
                             else FILES_BASE + source.file_id)
        return {"fileData": {"mimeType": mime, "fileUri": uri}}
    if isinstance(source, UrlSource):
        return {"fileData": {"mimeType": mime, "fileUri": source.url}}
    return {"inlineData": {"mimeType": mime, "data": media.base64(part)}}


SPEC = ProviderSpec(
    name=PROVIDER,
    wire=__name__,
    base_url="https://generativelanguage.googleapis.com",
    env_keys=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    auth=header_auth("x-goog-api-key"),
    path="/v1beta/models/{model}:generateContent",
    stream_path="/v1beta/models/{model}:streamGenerateContent",
    stream_params={"alt": "sse"},
    description="Gemini API (media inside functionResponse on Gemini 3)",
)
register(SPEC)


# --- reply --------------------------------------------------------------------------------------


def parse_response(data: Mapping[str, Any]) -> ModelReply:
    """A ``generateContent`` JSON reply as a ``ModelReply``.

    :raises ProviderError: the body is an error object.
    """
    _raise_error(data)
    parts: list[MessagePart] = []
    candidate = _candidate(data)
    response_id = data.get("responseId")
    for index, raw in enumerate((candidate.get("content") or {}).get("parts") or []):
        parts.extend(_reply_parts(raw, index, response_id))
    return ModelReply(parts=parts, usage=_usage(data.get("usageMetadata") or {}),
                      finish_reason=_finish(data, any(isinstance(p, ToolCall) for p in parts)),
                      response_id=response_id, model=data.get("modelVersion"))


def _candidate(data: Mapping[str, Any]) -> Mapping[str, Any]:
    candidates = data.get("candidates") or []
    return candidates[0] if candidates else {}


def _reply_parts(raw: Mapping[str, Any], index: int,
                 response_id: str | None) -> list[MessagePart]:
    signature = raw.get("thoughtSignature")
    if "functionCall" in raw:
        call = raw["functionCall"]
        call_id = call.get("id") or f"{LOCAL_ID_PREFIX}{response_id or 'call'}_{index}"
        return [ToolCall(call_id, call["name"], json.dumps(call.get("args") or {},
                                                           ensure_ascii=False), signature)]
    if raw.get("thought"):
        return [Reasoning(raw.get("text", ""), provider=PROVIDER, signature=signature)]
    if "text" in raw:
        text = Text(raw["text"])
        # A signature on an answer part is replayed on that part (see _model_parts).
        return [Reasoning(provider=PROVIDER, signature=signature), text] if signature \
            else [text]
    return []


def _usage(raw: Mapping[str, Any]) -> Usage:
    return Usage(input_tokens=raw.get("promptTokenCount") or 0,
                 output_tokens=(raw.get("candidatesTokenCount") or 0)
                 + (raw.get("thoughtsTokenCount") or 0),
                 cache_read_tokens=raw.get("cachedContentTokenCount") or 0,
                 reasoning_tokens=raw.get("thoughtsTokenCount") or 0)


def _finish(data: Mapping[str, Any], tool_calls: bool) -> str | None:
    reason = _candidate(data).get("finishReason")
    if reason is None and (data.get("promptFeedback") or {}).get("blockReason"):
        return "content_filter"
    if reason is None:
        return None
    if reason == "STOP" and tool_calls:
        return "tool_calls"
    return _FINISH.get(reason, str(reason).lower())


async def parse_stream(chunks: AsyncIterable[bytes]) -> AsyncIterator[StreamDelta]:
    """Translate ``streamGenerateContent?alt=sse`` chunks into ``StreamDelta``s.

    Each SSE event holds a whole ``GenerateContentResponse``; function calls arrive whole. The
    stream has no terminal event: it is complete once a chunk carried a ``finishReason``.

    :raises ProviderError: a chunk is an error object.
    :raises StreamInterrupted: the stream ended without a ``finishReason``.
    """
    usage = Usage()
    last: Mapping[str, Any] = {}
    finished = False
    calls = 0
    part_index = 0
    async with aclosing(iter_sse(chunks)) as items:
        async for event in items:
            if not event.data:
                continue
            data = json.loads(event.data)
            _raise_error(data)
            last = data
            if data.get("usageMetadata"):
                usage = _usage(data["usageMetadata"])
            candidate = _candidate(data)
            for raw in (candidate.get("content") or {}).get("parts") or []:
                for part in _reply_parts(raw, part_index, data.get("responseId")):
                    if isinstance(part, ToolCall):
                        yield ToolCallStart(calls, part.id, part.name, part.signature)
                        yield ToolCallDelta(calls, part.arguments)
                        yield ToolCallEnd(calls)
                        calls += 1
                    elif isinstance(part, Reasoning):
                        if part.text:
                            yield ReasoningDelta(part.text)
                        if part.signature:
                            yield ReasoningDelta(signature=part.signature)
                    elif isinstance(part, Text) and part.text:
                        yield TextDelta(part.text)
                part_index += 1
            if candidate.get("finishReason") or (data.get("promptFeedback") or {}).get(
                    "blockReason"):
                finished = True
    if not finished:
        raise StreamInterrupted("stream ended without a finishReason", provider=PROVIDER)
    yield UsageDelta(usage)
    yield FinishDelta(_finish(last, calls > 0), last.get("responseId"), last.get("modelVersion"))


def _raise_error(data: Any) -> None:
    if isinstance(data, list) and data:
        data = data[0]
    error = data.get("error") if isinstance(data, Mapping) else None
    if not isinstance(error, Mapping):
        return
    status = error.get("code") if isinstance(error.get("code"), int) else None
    message = f"{error.get('status') or 'error'}: {error.get('message') or ''}".strip()
    if status == 429 or error.get("status") == "RESOURCE_EXHAUSTED":
        raise RateLimited(message, provider=PROVIDER, status=status or 429)
    raise ProviderError(message, provider=PROVIDER, status=status)

