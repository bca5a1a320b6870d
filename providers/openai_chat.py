"""OpenAI Chat Completions (``POST /v1/chat/completions``) and its dialects.

A ``role:"tool"`` message carries text only (the SDK type allows text parts, nothing else), so
media returned by tools go to **one** follow-up user message after the whole batch of tool
messages, each item labelled with its call id and item number (``_placement``); kinds the model
cannot take at all (audio on non-audio models, video everywhere) become text notes.

User content parts: ``image_url`` (URL or data URL), ``input_audio`` (base64 wav/mp3, audio
models only), ``file`` (PDF only: ``file_data`` data URL + ``filename``, or an OpenAI
``file_id``). Text documents (``text/*``, JSON) are sent as text parts: Chat has no text file
part. ``arguments`` of a tool call are a JSON string.

The OpenAI-compatible family (``openai_compat``) reuses ``ChatWire`` with a ``ChatDialect``
(``max_tokens`` field name, plain-string content, Mistral's ``document_url`` and bridge turn,
tool-call id rules). The module-level ``build_request`` / ``parse_response`` / ``parse_stream`` /
``CAPABILITIES`` are OpenAI's own.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any

import msgspec

from plait import (
    Audio,
    ContentRejected,
    Document,
    FinishDelta,
    Image,
    InlineSource,
    LocalPathSource,
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
from ._capabilities import AUDIO, DOCUMENT, IMAGE, MB, Capabilities, CapabilityTable
from ._placement import media_note, place_media
from ._registry import ProviderSpec, register
from ._schema import wire_parameters
from ._sse import iter_sse
from ._turns import pair_tool_results

__all__ = [
    "CAPABILITIES",
    "OPENAI",
    "PROVIDER",
    "ChatDialect",
    "ChatWire",
    "build_request",
    "parse_response",
    "parse_stream",
]

PROVIDER = "openai"

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
TEXT_DOCUMENT_TYPES = frozenset({"text/plain", "text/markdown", "text/csv", "text/html",
                                 "text/xml", "application/json", "text/x-python"})
PDF = "application/pdf"
AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav",
                 "audio/vnd.wave": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}

_OPENAI = Capabilities(
    provider=PROVIDER,
    family="gpt",
    user_kinds=frozenset({IMAGE, DOCUMENT}),
    mime_types={IMAGE: IMAGE_TYPES, DOCUMENT: TEXT_DOCUMENT_TYPES | {PDF}},
    # images-vision guide: "up to 50 MB total payload ... up to 500 individual image inputs".
    max_items_per_kind={IMAGE: 500},
    max_request_bytes=50 * MB,
    url_kinds=frozenset({IMAGE}),
    file_provider=PROVIDER,
    file_id_kinds=frozenset({DOCUMENT}),
)

CAPABILITIES = CapabilityTable(PROVIDER, [
    ("gpt-4o*audio*", _OPENAI.with_(family="gpt-audio", user_kinds=frozenset({IMAGE, DOCUMENT,
                                                                              AUDIO}),
                                    mime_types={**_OPENAI.mime_types,
                                                AUDIO: frozenset(AUDIO_FORMATS)})),
    ("gpt-audio*", _OPENAI.with_(family="gpt-audio", user_kinds=frozenset({AUDIO}),
                                 mime_types={AUDIO: frozenset(AUDIO_FORMATS)})),
    ("gpt-3.5*", _OPENAI.with_(family="gpt-3.5", user_kinds=frozenset())),
    ("o1-mini*", _OPENAI.with_(family="o-mini", user_kinds=frozenset())),
    ("o3-mini*", _OPENAI.with_(family="o-mini", user_kinds=frozenset())),
], _OPENAI)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ChatDialect:
    """How one OpenAI-compatible API departs from OpenAI's own Chat Completions."""

    provider: str = PROVIDER
    max_tokens_field: str = "max_completion_tokens"
    stream_usage: bool = True
    """Send ``stream_options.include_usage`` (usage arrives in a last, choice-less chunk)."""
    string_content: bool = False
    """Text-only content goes as one string (some APIs reject part arrays)."""
    document_part: str = "file"
    """``"file"`` (OpenAI) or ``"document_url"`` (Mistral) for PDFs."""
    bridge: Message | None = None
    """An assistant turn between tool messages and the follow-up user message (Mistral)."""
    tool_id: Callable[[str], str] | None = None
    """Rewrites tool-call ids the API would reject (applied to calls and results alike)."""
    reasoning_field: str | None = None
    """Where replies carry reasoning text (``reasoning_content`` / ``reasoning``)."""
    seed_field: str = "seed"


def max_length_id(limit: int) -> Callable[[str], str]:
    """A ``tool_id`` rule: ids longer than ``limit`` become a stable hash of that length."""
    def rewrite(call_id: str) -> str:
        if len(call_id) <= limit:
            return call_id
        return "call_" + hashlib.sha256(call_id.encode()).hexdigest()[: limit - 5]
    return rewrite


class ChatWire:
    """``build_request`` / ``parse_response`` / ``parse_stream`` for one dialect."""

    def __init__(self, capabilities: CapabilityTable, dialect: ChatDialect) -> None:
        self.CAPABILITIES = capabilities
        self.dialect = dialect

    def parse_response(self, data: Any) -> ModelReply:
        """The canonical reply for a decoded non-streaming response."""
        return parse_completion(data, self.dialect.provider)

    def parse_stream(self, chunks: AsyncIterable[bytes]) -> AsyncIterator[StreamDelta]:
        """Canonical deltas from the raw body of a streaming response."""
        return parse_chunks(chunks, self.dialect.provider)

    # --- request --------------------------------------------------------------------------------

    def build_request(self, request: ModelRequest, *, caps: Capabilities | None = None,
                      media: MediaEncoder | None = None) -> dict[str, Any]:
        """The Chat Completions JSON body for ``request``.

        Raises ``ConversationError`` (tool calls unanswered or out of turn) and
        ``ContentRejected`` (unresolved handle, a source this API cannot take).
        """
        caps = caps or self.CAPABILITIES.lookup(request.model)
        media = media or MediaEncoder()
        d = self.dialect
        messages = place_media(pair_tool_results(request.messages), caps, bridge=d.bridge)
        wire: list[dict[str, Any]] = []
        if request.system:
            wire.append({"role": "system", "content": request.system})
        for message in messages:
            if message.role == "system":
                wire.append({"role": "system", "content": message.text})
            elif message.role == "assistant":
                assistant = self._assistant(message, caps)
                if assistant["content"] is not None or "tool_calls" in assistant:
                    wire.append(assistant)  # a reasoning-only turn has nothing to replay
            elif message.role == "tool":
                wire.extend(self._tool(part, caps) for part in message.parts
                            if isinstance(part, ToolResult))
            else:
                wire.append({"role": "user",
                             "content": self._content(message.parts, caps, media)})
        body: dict[str, Any] = {"model": request.model, "messages": wire}
        if request.tools:
            body["tools"] = [{"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": wire_parameters(t.parameters)}}
                for t in request.tools]
            if request.tool_choice:
                body["tool_choice"] = (
                    request.tool_choice if request.tool_choice in ("auto", "none", "required")
                    else {"type": "function", "function": {"name": request.tool_choice}})
        options = request.options
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.max_tokens is not None:
            body[d.max_tokens_field] = options.max_tokens
        if options.top_p is not None:
            body["top_p"] = options.top_p
        if options.stop:
            body["stop"] = list(options.stop)
        if options.seed is not None:
            body[d.seed_field] = options.seed
        if options.reasoning_effort:
            body["reasoning_effort"] = options.reasoning_effort
        if request.stream:
            body["stream"] = True
            if d.stream_usage:
                body["stream_options"] = {"include_usage": True}
        if options.extra:
            body.update(options.extra)
        return body

    def _id(self, call_id: str) -> str:
        rule = self.dialect.tool_id
        return rule(call_id) if rule else call_id

    def _assistant(self, message: Message, caps: Capabilities) -> dict[str, Any]:
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, Text):
                texts.append(part.text)
            elif isinstance(part, ToolCall):
                calls.append({"id": self._id(part.id), "type": "function",
                              "function": {"name": part.name, "arguments": part.arguments}})
            elif isinstance(part, MediaPart):
                texts.append(media_note(part, caps, where="assistant").text)
            # Reasoning is not replayed: Chat has no field for it (DeepSeek rejects it back).
        out: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
        if calls:
            out["tool_calls"] = calls
        return out

    def _tool(self, result: ToolResult, caps: Capabilities) -> dict[str, Any]:
        if result.raw is not None and result.raw.provider == caps.provider:
            content: Any = result.raw.value
        else:
            texts = [p.text for p in result.output if isinstance(p, Text)]
            content = "\n".join(texts)
            if result.is_error:
                content = f"[tool error] {content}"
        return {"role": "tool", "tool_call_id": self._id(result.call_id), "content": content}

    def _content(self, parts: list[MessagePart], caps: Capabilities,
                 media: MediaEncoder) -> str | list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for part in parts:
            if isinstance(part, Text):
                out.append({"type": "text", "text": part.text})
            elif isinstance(part, Image):
                out.append({"type": "image_url", "image_url": {"url": _url(part, media, caps)}})
            elif isinstance(part, Document):
                out.append(self._document(part, media, caps))
            elif isinstance(part, Audio):
                out.append(_audio(part, media, caps))
            elif isinstance(part, Video):
                out.append({"type": "text", "text": media_note(part, caps, where="user").text})
        if not out:
            return ""
        if all(p["type"] == "text" for p in out) and (self.dialect.string_content
                                                       or len(out) == 1):
            return "\n".join(p["text"] for p in out)
        return out

    def _document(self, part: Document, media: MediaEncoder,
                  caps: Capabilities) -> dict[str, Any]:
        mime = (part.media_type or "").split(";", 1)[0].lower()
        source = _require_source(part, caps)
        if mime != PDF and (mime.startswith("text/") or mime in TEXT_DOCUMENT_TYPES):
            return {"type": "text", "text": _text_document(part, source, caps)}
        if isinstance(source, ProviderFileSource):
            _check_file(part, source, caps)
            return {"type": "file", "file": {"file_id": source.file_id}}
        if isinstance(source, UrlSource):
            if self.dialect.document_part == "document_url":
                return {"type": "document_url", "document_url": source.url}
            raise _rejected(part, caps, "this API takes no document URL; rehost it first")
        if self.dialect.document_part == "document_url":
            return {"type": "document_url", "document_url": media.data_url(part, PDF)}
        return {"type": "file", "file": {"file_data": media.data_url(part, PDF),
                                         "filename": part.name or "document.pdf"}}


def _require_source(part: MediaPart,
                    caps: Capabilities) -> InlineSource | LocalPathSource | UrlSource | \
        ProviderFileSource:
    if part.source is None:
        raise _rejected(part, caps, "the part has a handle but no source: resolve it first")
    return part.source


def _rejected(part: MediaPart, caps: Capabilities, why: str) -> ContentRejected:
    handle = f" (handle {part.handle.id})" if part.handle else ""
    return ContentRejected(f"{caps.provider}: {part.kind} part {part.name or ''}{handle}: {why}",
                           provider=caps.provider, part=part.name or str(part.kind),
                           limit=why)


def _check_file(part: MediaPart, source: ProviderFileSource, caps: Capabilities) -> None:
    if not caps.takes_file_id(part.kind, source.provider):
        raise _rejected(part, caps, f"a {source.provider} file id cannot be sent here for "
                                    f"{part.kind}; rehost it first")


def _url(part: Image, media: MediaEncoder, caps: Capabilities) -> Any:
    source = _require_source(part, caps)
    if isinstance(source, UrlSource):
        return source.url
    if isinstance(source, ProviderFileSource):
        # Chat cannot reference an uploaded image by file_id (pydantic-ai's finding too).
        raise _rejected(part, caps, "images cannot be referenced by file id in Chat "
                                    "Completions; inline it or use a URL")
    return media.data_url(part)


def _audio(part: Audio, media: MediaEncoder, caps: Capabilities) -> dict[str, Any]:
    source = _require_source(part, caps)
    if isinstance(source, UrlSource | ProviderFileSource):
        raise _rejected(part, caps, "audio must be inline (base64 wav or mp3)")
    fmt = AUDIO_FORMATS.get((part.media_type or "").split(";", 1)[0].lower())
    if fmt is None:
        raise _rejected(part, caps, f"audio format {part.media_type} is not wav or mp3")
    return {"type": "input_audio", "input_audio": {"data": media.base64(part), "format": fmt}}


def _text_document(part: Document, source: Any, caps: Capabilities) -> str:
    if isinstance(source, InlineSource):
        data = source.data
    elif isinstance(source, LocalPathSource):
        with open(source.path, "rb") as fh:
            data = fh.read()
    else:
        raise _rejected(part, caps, "text documents must be inline or local to be sent as text")
    header = f"[document {part.name or ''} ({part.media_type})]".replace("  ", " ")
    return f"{header}\n{data.decode('utf-8', 'replace')}"


# --- response -------------------------------------------------------------------------------


class _Function(msgspec.Struct):
    name: str = ""
    arguments: str | dict[str, Any] | None = None

    def text(self) -> str | None:
        """Arguments as JSON text (a few compatible APIs send an object)."""
        if isinstance(self.arguments, dict):
            return msgspec.json.encode(self.arguments).decode()
        return self.arguments


class _WireToolCall(msgspec.Struct):
    id: str | None = None
    function: _Function = msgspec.field(default_factory=_Function)
    index: int | None = None


class _WireMessage(msgspec.Struct):
    content: str | None = None
    tool_calls: list[_WireToolCall] | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    refusal: str | None = None


class _Choice(msgspec.Struct):
    message: _WireMessage | None = None
    delta: _WireMessage | None = None
    finish_reason: str | None = None
    index: int = 0


class _Details(msgspec.Struct):
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    prompt_tokens_details: _Details | None = None
    completion_tokens_details: _Details | None = None
    prompt_cache_hit_tokens: int | None = None  # DeepSeek


class _XGroq(msgspec.Struct):
    usage: _Usage | None = None


class _Completion(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    choices: list[_Choice] = msgspec.field(default_factory=list)
    usage: _Usage | None = None
    error: Any = None
    x_groq: _XGroq | None = None  # Groq streams usage here in the last chunk


def usage_of(usage: _Usage | None) -> Usage:
    """Canonical usage from an OpenAI-style ``usage`` object."""
    if usage is None:
        return Usage()
    prompt = usage.prompt_tokens_details
    completion = usage.completion_tokens_details
    cached = (prompt.cached_tokens if prompt else None) or usage.prompt_cache_hit_tokens or 0
    return Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0, cached, 0,
                 (completion.reasoning_tokens if completion else None) or 0)


def _error(error: Any, provider: str) -> ProviderError:
    message = str(error.get("message") or error) if isinstance(error, dict) else str(error)
    return ProviderError(message[:1000], provider=provider)


def _reasoning_of(message: _WireMessage) -> str | None:
    return message.reasoning_content or message.reasoning


def parse_completion(data: Any, provider: str) -> ModelReply:
    """A canonical reply from a decoded Chat Completions response of ``provider``."""
    try:
        completion = msgspec.convert(data, _Completion)
    except msgspec.ValidationError as exc:
        raise ProviderError(f"unexpected response shape: {exc}", provider=provider) from None
    if completion.error is not None:
        raise _error(completion.error, provider)
    if not completion.choices or completion.choices[0].message is None:
        raise ProviderError("response has no choices", provider=provider)
    choice = completion.choices[0]
    message = choice.message
    assert message is not None
    parts: list[MessagePart] = []
    reasoning = _reasoning_of(message)
    if reasoning:
        parts.append(Reasoning(reasoning, provider=provider))
    if message.content:
        parts.append(Text(message.content))
    elif message.refusal:
        parts.append(Text(message.refusal))
    for call in message.tool_calls or []:
        parts.append(ToolCall(call.id or "", call.function.name,
                              call.function.text() or "{}"))
    return ModelReply(parts, usage_of(completion.usage), choice.finish_reason,
                      completion.id, completion.model)


async def parse_chunks(chunks: AsyncIterable[bytes], provider: str
                       ) -> AsyncIterator[StreamDelta]:
    """Canonical deltas from a Chat Completions SSE stream of ``provider``.

    Raises ``ProviderError`` for an error event and ``StreamInterrupted`` when the stream
    ends before ``[DONE]`` and before any finish reason.
    """
    decoder = msgspec.json.Decoder(_Completion)
    open_calls: dict[int, bool] = {}
    finish: str | None = None
    response_id: str | None = None
    model: str | None = None
    done = False
    # Read to the end even after [DONE], so the byte source is exhausted and closes itself.
    async for event in iter_sse(chunks):
        if done:
            continue
        if event.data.strip() == "[DONE]":
            done = True
            continue
        try:
            chunk = decoder.decode(event.data)
        except msgspec.DecodeError:
            raise ProviderError(f"malformed stream chunk: {event.data[:200]!r}",
                                provider=provider) from None
        if chunk.error is not None:
            raise _error(chunk.error, provider)
        response_id = chunk.id or response_id
        model = chunk.model or model
        for choice in chunk.choices[:1]:
            delta = choice.delta or choice.message
            if delta is not None:
                reasoning = _reasoning_of(delta)
                if reasoning:
                    yield ReasoningDelta(reasoning)
                if delta.content:
                    yield TextDelta(delta.content)
                for position, call in enumerate(delta.tool_calls or []):
                    index = call.index if call.index is not None else position
                    if index not in open_calls:
                        open_calls[index] = True
                        yield ToolCallStart(index, call.id or "", call.function.name)
                    arguments = call.function.text()
                    if arguments:
                        yield ToolCallDelta(index, arguments)
            if choice.finish_reason:
                finish = choice.finish_reason
        usage = chunk.usage or (chunk.x_groq.usage if chunk.x_groq else None)
        if usage is not None:
            yield UsageDelta(usage_of(usage))
    if not done and finish is None:
        raise StreamInterrupted("stream ended before [DONE]", provider=provider)
    for index in open_calls:
        yield ToolCallEnd(index)
    yield FinishDelta(finish, response_id, model)


OPENAI = ChatWire(CAPABILITIES, ChatDialect(tool_id=max_length_id(40)))
"""OpenAI's own Chat Completions."""


def build_request(request: ModelRequest, *, caps: Capabilities | None = None,
                  media: MediaEncoder | None = None) -> dict[str, Any]:
    """OpenAI Chat Completions JSON for ``request`` (see ``ChatWire.build_request``)."""
    return OPENAI.build_request(request, caps=caps, media=media)


def parse_response(data: Any) -> ModelReply:
    """A canonical reply from a decoded OpenAI Chat Completions response."""
    return parse_completion(data, PROVIDER)


def parse_stream(chunks: AsyncIterable[bytes]) -> AsyncIterator[StreamDelta]:
    """Canonical deltas from an OpenAI Chat Completions SSE body."""
    return parse_chunks(chunks, PROVIDER)


register(ProviderSpec(name=PROVIDER, wire=__name__, base_url="https://api.openai.com/v1",
                      env_keys=("OPENAI_API_KEY",), path="/chat/completions",
                      description="OpenAI Chat Completions"))
