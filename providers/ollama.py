"""Ollama's native chat API (``POST /api/chat``).

Differences from the OpenAI shape that shape this module:

- **No tool-call ids.** Results are matched by order and ``tool_name``, so tool messages are
  emitted in call order (``pair_tool_results`` guarantees it) with ``tool_name`` set; replies get
  synthetic, deterministic ids (``ollama_<n>_<digest>``) so the canonical history can pair them.
- ``arguments`` is a JSON **object**; a call whose recorded arguments are not an object is
  replayed as ``{"_raw_arguments": "<text>"}`` rather than dropped.
- Images are raw base64 strings in a message's ``images`` list; the ``tool`` role carries text
  only, so tool-returned images go on one following ``user`` message whose text lists the labels
  in image order. Only vision model families take images at all.
- Streaming is newline-delimited JSON (not SSE), ending with an object whose ``done`` is true;
  the API streams by default, so ``stream`` is always sent.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import msgspec

from plait import (
    Audio,
    ContentRejected,
    Document,
    FinishDelta,
    Image,
    Message,
    MessagePart,
    ModelReply,
    ModelRequest,
    ProviderError,
    ProviderFileSource,
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
from plait._parts import MediaPart

from ._body import MediaEncoder
from ._capabilities import IMAGE, Capabilities, CapabilityTable
from ._client import Provider
from ._placement import media_note, place_media
from ._registry import ProviderSpec, register
from ._schema import wire_parameters
from ._turns import pair_tool_results

__all__ = [
    "CAPABILITIES",
    "PROVIDER",
    "OllamaProvider",
    "build_request",
    "iter_lines",
    "parse_response",
    "parse_stream",
]

PROVIDER = "ollama"

_VISION = Capabilities(provider=PROVIDER, family="vision", user_kinds=frozenset({IMAGE}),
                       mime_types={IMAGE: frozenset({"image/png", "image/jpeg"})})
_TEXT = _VISION.with_(family="text", user_kinds=frozenset())

# First match wins: gemma3:1b is text-only, the larger gemma3 models see images.
CAPABILITIES = CapabilityTable(PROVIDER, [("gemma3:1b*", _TEXT)] + [
    (pattern, _VISION) for pattern in (
        "llava*", "bakllava*", "llama3.2-vision*", "llama4*", "gemma3*", "qwen2.5vl*",
        "qwen2.5-vl*", "qwen3-vl*", "minicpm-v*", "moondream*", "granite3.2-vision*",
        "mistral-small3.1*", "mistral-small3.2*",
    )
], _TEXT)


# --- request --------------------------------------------------------------------------------------


def build_request(request: ModelRequest, *, caps: Capabilities | None = None,
                  media: MediaEncoder | None = None) -> dict[str, Any]:
    """The ``/api/chat`` JSON body for ``request``.

    Raises ``ConversationError`` (tool calls unanswered or out of turn) and ``ContentRejected``
    (an image that is not inline or local: Ollama fetches nothing).
    """
    caps = caps or CAPABILITIES.lookup(request.model)
    media = media or MediaEncoder()
    messages = place_media(pair_tool_results(request.messages), caps)
    wire: list[dict[str, Any]] = []
    if request.system:
        wire.append({"role": "system", "content": request.system})
    for message in messages:
        wire.append(_message(message, caps, media))
    body: dict[str, Any] = {"model": request.model, "messages": wire,
                            "stream": bool(request.stream)}
    if request.tools and request.tool_choice != "none":
        body["tools"] = [{"type": "function", "function": {
            "name": t.name, "description": t.description, "parameters": wire_parameters(t.parameters)}}
            for t in request.tools]
    opts = request.options
    options: dict[str, Any] = {}
    if opts.temperature is not None:
        options["temperature"] = opts.temperature
    if opts.max_tokens is not None:
        options["num_predict"] = opts.max_tokens
    if opts.top_p is not None:
        options["top_p"] = opts.top_p
    if opts.stop:
        options["stop"] = list(opts.stop)
    if opts.seed is not None:
        options["seed"] = opts.seed
    if options:
        body["options"] = options
    if opts.reasoning_effort:
        body["think"] = opts.reasoning_effort if opts.reasoning_effort in (
            "low", "medium", "high") else True
    if opts.extra:
        body.update(opts.extra)
    return body


def _message(message: Message, caps: Capabilities, media: MediaEncoder) -> dict[str, Any]:
    if message.role == "tool":
        result = next(p for p in message.parts if isinstance(p, ToolResult))
        text = "\n".join(p.text for p in result.output if isinstance(p, Text))
        if result.is_error:
            text = f"[tool error] {text}"
        return {"role": "tool", "content": text, "tool_name": result.name}
    texts: list[str] = []
    images: list[Any] = []
    calls: list[dict[str, Any]] = []
    thinking: list[str] = []
    for part in message.parts:
        if isinstance(part, Text):
            texts.append(part.text)
        elif isinstance(part, Image) and message.role == "user":
            images.append(_image(part, media, caps))
        elif isinstance(part, Image | Audio | Video | Document):
            texts.append(media_note(part, caps, where=message.role).text)
        elif isinstance(part, ToolCall):
            calls.append({"function": {"name": part.name,
                                       "arguments": _arguments(part.arguments)}})
        elif isinstance(part, Reasoning) and part.text:
            thinking.append(part.text)
    out: dict[str, Any] = {"role": message.role, "content": "\n".join(texts)}
    if images:
        out["images"] = images
    if calls:
        out["tool_calls"] = calls
    if thinking:
        out["thinking"] = "".join(thinking)
    return out


def _image(part: MediaPart, media: MediaEncoder, caps: Capabilities) -> Any:
    if part.source is None or isinstance(part.source, UrlSource | ProviderFileSource):
        what = "no source" if part.source is None else type(part.source).__name__
        raise ContentRejected(f"{caps.provider}: image {part.name or ''} has {what}; Ollama "
                              "takes inline or local images only", provider=caps.provider,
                              part=part.name or "image", limit="inline or local source")
    return media.base64(part)


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(text or "{}")
    except msgspec.DecodeError:
        value = None
    return value if isinstance(value, dict) else {"_raw_arguments": text}


# --- response -------------------------------------------------------------------------------------


class _Function(msgspec.Struct):
    name: str = ""
    arguments: Any = None


class _Call(msgspec.Struct):
    function: _Function = msgspec.field(default_factory=_Function)


class _Msg(msgspec.Struct):
    content: str = ""
    thinking: str | None = None
    tool_calls: list[_Call] | None = None


class _Chunk(msgspec.Struct):
    model: str | None = None
    created_at: str | None = None
    message: _Msg | None = None
    done: bool = False
    done_reason: str | None = None
    prompt_eval_count: int | None = None
    eval_count: int | None = None
    error: str | None = None


def _call_id(chunk: _Chunk, index: int, call: _Call) -> str:
    digest = hashlib.sha256(f"{chunk.created_at}|{index}|{call.function.name}".encode())
    return f"ollama_{index}_{digest.hexdigest()[:12]}"


def _args_text(call: _Call) -> str:
    args = call.function.arguments
    if isinstance(args, str):
        return args
    return msgspec.json.encode(args if args is not None else {}).decode()


def _usage(chunk: _Chunk) -> Usage:
    return Usage(chunk.prompt_eval_count or 0, chunk.eval_count or 0)


def _finish(chunk: _Chunk, had_calls: bool) -> str | None:
    reason = chunk.done_reason
    return "tool_calls" if had_calls and reason in (None, "stop") else reason


def parse_response(data: Any) -> ModelReply:
    """A canonical reply from a decoded non-streaming ``/api/chat`` response."""
    try:
        chunk = msgspec.convert(data, _Chunk)
    except msgspec.ValidationError as exc:
        raise ProviderError(f"unexpected response shape: {exc}", provider=PROVIDER) from None
    if chunk.error:
        raise ProviderError(chunk.error, provider=PROVIDER)
    message = chunk.message or _Msg()
    parts: list[MessagePart] = []
    if message.thinking:
        parts.append(Reasoning(message.thinking, provider=PROVIDER))
    if message.content:
        parts.append(Text(message.content))
    calls = message.tool_calls or []
    for index, call in enumerate(calls):
        parts.append(ToolCall(_call_id(chunk, index, call), call.function.name,
                              _args_text(call)))
    return ModelReply(parts, _usage(chunk), _finish(chunk, bool(calls)), None, chunk.model)


async def iter_lines(chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """Complete newline-terminated lines from a byte stream split anywhere (NDJSON).

    A trailing line without its newline is still yielded: NDJSON ends with ``done: true``,
    which is what tells a complete stream from a cut one.
    """
    buffer = b""
    async for chunk in chunks:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield line
    if buffer.strip():
        yield buffer


async def parse_stream(chunks: AsyncIterable[bytes]) -> AsyncIterator[StreamDelta]:
    """Canonical deltas from an ``/api/chat`` NDJSON stream.

    Raises ``ProviderError`` on an error line, ``StreamInterrupted`` when no ``done`` line came.
    """
    decoder = msgspec.json.Decoder(_Chunk)
    index = 0
    finished = False
    async for line in iter_lines(chunks):
        if finished:
            continue  # read to the end so the byte source closes itself
        try:
            chunk = decoder.decode(line)
        except msgspec.DecodeError:
            raise StreamInterrupted(f"malformed stream line: {line[:200]!r}",
                                    provider=PROVIDER) from None
        if chunk.error:
            raise ProviderError(chunk.error, provider=PROVIDER)
        message = chunk.message
        if message is not None:
            if message.thinking:
                yield ReasoningDelta(message.thinking)
            if message.content:
                yield TextDelta(message.content)
            for call in message.tool_calls or []:
                yield ToolCallStart(index, _call_id(chunk, index, call), call.function.name)
                yield ToolCallDelta(index, _args_text(call))
                yield ToolCallEnd(index)
                index += 1
        if chunk.done:
            yield UsageDelta(_usage(chunk))
            yield FinishDelta(_finish(chunk, index > 0), None, chunk.model)
            finished = True
    if finished:
        return
    raise StreamInterrupted("stream ended before its done line", provider=PROVIDER)


class OllamaProvider(Provider):
    """Ollama: base URL from ``base_url=``, else ``OLLAMA_HOST``, else localhost:11434."""

    def __init__(self, spec: ProviderSpec, model: str, *, base_url: str | None = None,
                 **options: Any) -> None:
        host = base_url or os.environ.get("OLLAMA_HOST") or spec.base_url
        if "://" not in host:
            host = f"http://{host}"
        super().__init__(spec, model, base_url=host, **options)


register(ProviderSpec(name=PROVIDER, wire=__name__, base_url="http://127.0.0.1:11434",
                      env_keys=("OLLAMA_API_KEY",), key_required=False, path="/api/chat",
                      client=OllamaProvider, http2=False, description="Ollama /api/chat"))
