"""AWS Bedrock Converse (``POST /model/{id}/converse`` and ``/converse-stream``).

Media returned by tools go inside ``toolResult.content`` for the kinds each model family takes
there: **Claude** images and documents, **Nova** images and video; Nova documents go beside the
``toolResult`` blocks in the same user message. Other families get the tool text plus a
placeholder, and the media after the tool results of the same user message (``_placement``).
Bytes travel base64-encoded in the JSON wire format; S3 locations are sent as ``s3Location``.

Rules enforced by construction: tool results first in the user message, one per ``toolUse`` in
call order; ``toolUseId`` always matches ``[a-zA-Z0-9_-]{1,64}`` (other providers' ids are mapped
deterministically); a user message with a top-level document also holds a text block; document
names are neutral (``Document 1``…) because the model reads them; per-message limits (20 images,
5 documents) are checked here because they are per message, not per request.

Requests are signed with SigV4 through botocore (extra ``bedrock``), or sent with a Bedrock API
key (``AWS_BEARER_TOKEN_BEDROCK``) as a bearer token.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any
from urllib.parse import quote

import httpx

from plait import (
    Audio,
    AuthenticationError,
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
    Video,
)
from plait._parts import MediaPart

from ._body import MediaEncoder, StreamedBody
from ._capabilities import DOCUMENT, IMAGE, MB, VIDEO, Capabilities, CapabilityTable
from ._client import Provider
from ._eventstream import iter_frames
from ._log import logger
from ._placement import media_label, media_placeholder, place_media
from ._registry import ProviderSpec, bearer_auth, register
from ._schema import wire_parameters
from ._turns import pair_tool_results

__all__ = [
    "CAPABILITIES",
    "PROVIDER",
    "SPEC",
    "BedrockProvider",
    "build_request",
    "parse_response",
    "parse_stream",
    "tool_use_id",
]

PROVIDER = "bedrock"

IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg",
                 "image/gif": "gif", "image/webp": "webp"}
DOCUMENT_FORMATS = {
    "application/pdf": "pdf", "text/csv": "csv", "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html", "text/plain": "txt", "text/markdown": "md",
}
VIDEO_FORMATS = {
    "video/x-matroska": "mkv", "video/quicktime": "mov", "video/mp4": "mp4",
    "video/webm": "webm", "video/x-flv": "flv", "video/mpeg": "mpeg", "video/mpg": "mpg",
    "video/x-ms-wmv": "wmv", "video/3gpp": "three_gp",
}
_FORMATS = {IMAGE: IMAGE_FORMATS, DOCUMENT: DOCUMENT_FORMATS, VIDEO: VIDEO_FORMATS}
_PER_MESSAGE = {IMAGE: 20, DOCUMENT: 5}

_BASE = Capabilities(
    provider=PROVIDER,
    family="*",
    tool_result_kinds=frozenset(),
    user_kinds=frozenset({IMAGE, DOCUMENT}),
    mime_types={kind: frozenset(table) for kind, table in _FORMATS.items()},
    # API_runtime_Message: images up to 3.75 MB, documents up to 4.5 MB each.
    max_item_bytes={IMAGE: 3_750_000, DOCUMENT: 4_500_000, VIDEO: 25 * MB},
)
_CLAUDE = _BASE.with_(family="claude", tool_result_kinds=frozenset({IMAGE, DOCUMENT}))
_NOVA = _BASE.with_(family="nova", tool_result_kinds=frozenset({IMAGE, VIDEO}),
                    user_kinds=frozenset({IMAGE, DOCUMENT, VIDEO}),
                    url_kinds=frozenset({IMAGE, DOCUMENT, VIDEO}))

CAPABILITIES = CapabilityTable(
    PROVIDER,
    [
        # Model ids may carry a region prefix (us., eu., global.) or be an ARN.
        ("*anthropic.claude*", _CLAUDE),
        ("*amazon.nova*", _NOVA),
        ("*meta.llama3-2-11b*", _BASE.with_(family="llama-vision")),
        ("*meta.llama3-2-90b*", _BASE.with_(family="llama-vision")),
        ("*meta.llama4*", _BASE.with_(family="llama-vision")),
        ("*mistral.pixtral*", _BASE.with_(family="pixtral")),
    ],
    _BASE.with_(family="text", user_kinds=frozenset({DOCUMENT})),
)

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
_ID_OK = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_NAME_BAD = re.compile(r"[^a-zA-Z0-9_-]")
_THINKING_BUDGET = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576}


# --- request ------------------------------------------------------------------------------------


def tool_use_id(call_id: str) -> str:
    """``call_id`` if Bedrock accepts it, else a stable id derived from it (same in and out)."""
    if _ID_OK.fullmatch(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode()).hexdigest()[:16]
    return (_NAME_BAD.sub("_", call_id)[:47] + "_" + digest).lstrip("_") or digest


class _Builder:
    """Per-request state: document numbering and the media encoder."""

    def __init__(self, media: MediaEncoder, caps: Capabilities) -> None:
        self.media = media
        self.caps = caps
        self.documents = 0

    def user_message(self, parts: list[MessagePart]) -> dict[str, Any] | None:
        results: list[dict[str, Any]] = []
        others: list[dict[str, Any]] = []
        for part in parts:
            if isinstance(part, ToolResult):
                results.append(self.tool_result(part, others))
            elif (block := self.block(part)) is not None:
                others.append(block)
        if any("document" in b for b in others) and not any("text" in b for b in others):
            # "A message with a document must also contain a text block."
            names = ", ".join(b["document"]["name"] for b in others if "document" in b)
            others.append({"text": f"(attached: {names})"})
        content = results + others
        if not content:
            return None
        self.check_counts(content)
        return {"role": "user", "content": content}

    def check_counts(self, content: list[dict[str, Any]]) -> None:
        counts = {IMAGE: 0, DOCUMENT: 0}
        blocks = list(content)
        for block in content:
            blocks.extend(block.get("toolResult", {}).get("content", []))
        for block in blocks:
            for kind in counts:
                counts[kind] += str(kind) in block
        for kind, limit in _PER_MESSAGE.items():
            if counts[kind] > limit:
                raise ContentRejected(
                    f"{counts[kind]} {kind} blocks in one Bedrock message (limit {limit})",
                    provider=PROVIDER, part=f"{kind} blocks", limit=f"{limit} per message")

    def tool_result(self, result: ToolResult, siblings: list[dict[str, Any]]) -> dict[str, Any]:
        """The ``toolResult`` block; what may not sit inside it goes to ``siblings``."""
        block: dict[str, Any] = {"toolUseId": tool_use_id(result.call_id)}
        if result.raw is not None and result.raw.provider == PROVIDER:
            block["content"] = result.raw.value
        else:
            content: list[dict[str, Any]] = []
            for item, part in enumerate(result.output, start=1):
                if (self.caps.family == "nova" and isinstance(part, MediaPart)
                        and isinstance(part.source, UrlSource)):
                    # Nova rejects S3 locations inside toolResult ("extraneous key
                    # [toolResult]"): the item goes beside it, labelled, in the same message.
                    content.append({"text": media_placeholder(result.call_id, item, part)})
                    siblings.append({"text": media_label(result.call_id, item, part)})
                    moved = self.block(part)
                    assert moved is not None  # media parts always render
                    siblings.append(moved)
                elif (wire := self.block(part)) is not None:
                    content.append(wire)
            block["content"] = content or [{"text": "(no output)"}]
        if self.caps.family in ("claude", "nova"):
            block["status"] = "error" if result.is_error else "success"
        elif result.is_error:
            # Only Claude and Nova read ``status``; tell the others in the text.
            block["content"].insert(0, {"text": "[tool error]"})
        return {"toolResult": block}

    def block(self, part: MessagePart) -> dict[str, Any] | None:
        if isinstance(part, Text):
            return {"text": part.text} if part.text else None
        if isinstance(part, Image):
            return {"image": {"format": self.format(part), "source": self.source(part)}}
        if isinstance(part, Document):
            self.documents += 1
            return {"document": {"format": self.format(part), "name": f"Document {self.documents}",
                                 "source": self.source(part)}}
        if isinstance(part, Video):
            return {"video": {"format": self.format(part), "source": self.source(part)}}
        if isinstance(part, Audio):
            raise ContentRejected("Bedrock Converse takes no audio here", provider=PROVIDER,
                                  part=part.name or "audio")
        raise ContentRejected(f"a user message cannot hold {type(part).__name__} for Bedrock",
                              provider=PROVIDER, part=type(part).__name__)

    def format(self, part: Image | Document | Video) -> str:
        mime = (part.media_type or "").split(";", 1)[0].strip().lower()
        table = _FORMATS[part.kind]
        if mime not in table:
            raise ContentRejected(
                f"Bedrock takes {part.kind} as {', '.join(sorted(set(table.values())))}, "
                f"not {mime or 'unknown type'}", provider=PROVIDER, part=part.name,
                limit=f"{part.kind} formats")
        return table[mime]

    def source(self, part: Image | Document | Video) -> dict[str, Any]:
        source = part.source
        if source is None:
            raise ContentRejected(f"{part.kind} part has a handle but no source: resolve it "
                                  "first", provider=PROVIDER, part=part.name,
                                  limit="resolved source")
        if isinstance(source, UrlSource):
            if not source.url.startswith("s3://") or part.kind not in self.caps.url_kinds:
                raise ContentRejected(f"Bedrock ({self.caps.family}) cannot fetch "
                                      f"{source.url.split(':', 1)[0]} URLs for {part.kind}: "
                                      "rehost it first", provider=PROVIDER, part=part.name,
                                      limit="inline bytes or s3:// (Nova)")
            return {"s3Location": {"uri": source.url}}
        if isinstance(source, ProviderFileSource):
            raise ContentRejected(f"a {source.provider} file id cannot be sent to Bedrock: "
                                  "rehost it first", provider=PROVIDER, part=part.name,
                                  limit="inline bytes")
        return {"bytes": self.media.base64(part)}


def build_request(request: ModelRequest, *, caps: Capabilities | None = None,
                  media: MediaEncoder | None = None) -> dict[str, Any]:
    """The Converse JSON body for ``request`` (the model id goes in the URL).

    :raises ConversationError: a tool call is unanswered, answered twice, or answered out of turn.
    :raises ContentRejected: a part cannot be expressed (format, source, per-message limits).
    """
    caps = caps or CAPABILITIES.lookup(request.model)
    builder = _Builder(media or MediaEncoder(), caps)
    system: list[str] = [request.system] if request.system else []
    messages: list[dict[str, Any]] = []
    pending: list[MessagePart] = []  # a user turn: tool results, then what follows them

    def flush_user() -> None:
        if pending and (message := builder.user_message(list(pending))) is not None:
            messages.append(message)
        pending.clear()

    for message in place_media(pair_tool_results(request.messages), caps):
        if message.role == "system":
            if message.text:
                system.append(message.text)
        elif message.role == "assistant":
            flush_user()
            content = [b for p in message.parts if (b := _assistant_block(p)) is not None]
            if content:
                if messages and messages[-1]["role"] == "assistant":
                    messages[-1]["content"].extend(content)
                else:
                    messages.append({"role": "assistant", "content": content})
        else:
            pending.extend(message.parts)
    flush_user()

    body: dict[str, Any] = {"messages": messages}
    if system:
        body["system"] = [{"text": "\n\n".join(system)}]
    inference: dict[str, Any] = {}
    options = request.options
    if options.max_tokens is not None:
        inference["maxTokens"] = options.max_tokens
    if options.temperature is not None:
        inference["temperature"] = options.temperature
    if options.top_p is not None:
        inference["topP"] = options.top_p
    if options.stop:
        inference["stopSequences"] = list(options.stop)
    if inference:
        body["inferenceConfig"] = inference
    if options.seed is not None:
        logger.warning("option_not_supported", provider=PROVIDER, option="seed")
    if options.reasoning_effort:
        if caps.family == "claude":
            budget = _THINKING_BUDGET.get(options.reasoning_effort, 8192)
            body["additionalModelRequestFields"] = {
                "thinking": {"type": "enabled", "budget_tokens": budget}}
        else:
            logger.warning("option_not_supported", provider=PROVIDER, family=caps.family,
                           option="reasoning_effort")
    if request.tools:
        tools = []
        for tool in request.tools:
            schema = wire_parameters(tool.parameters)
            spec: dict[str, Any] = {"name": tool.name, "inputSchema": {"json": schema}}
            if tool.description:
                spec["description"] = tool.description
            tools.append({"toolSpec": spec})
        config: dict[str, Any] = {"tools": tools}
        choice = request.tool_choice
        if choice == "auto":
            config["toolChoice"] = {"auto": {}}
        elif choice == "required":
            config["toolChoice"] = {"any": {}}
        elif choice and choice != "none":
            config["toolChoice"] = {"tool": {"name": choice}}
        body["toolConfig"] = config
    if options.extra:
        body.update(options.extra)
    return body


def _assistant_block(part: MessagePart) -> dict[str, Any] | None:
    if isinstance(part, Text):
        return {"text": part.text} if part.text else None
    if isinstance(part, ToolCall):
        try:
            value = json.loads(part.arguments or "{}")
        except ValueError:
            value = None
        arguments = value if isinstance(value, dict) else {"_raw_arguments": part.arguments}
        return {"toolUse": {"toolUseId": tool_use_id(part.id), "name": part.name,
                            "input": arguments}}
    if isinstance(part, Reasoning):
        if part.provider != PROVIDER:
            return None
        if part.data is not None and part.signature is None:
            return {"reasoningContent": {"redactedContent": part.data}}
        text: dict[str, Any] = {"text": part.text}
        if part.signature:
            text["signature"] = part.signature
        return {"reasoningContent": {"reasoningText": text}}
    raise ContentRejected(f"an assistant message cannot hold {type(part).__name__} for Bedrock",
                          provider=PROVIDER, part=type(part).__name__)


# --- reply --------------------------------------------------------------------------------------


def parse_response(data: Mapping[str, Any]) -> ModelReply:
    """A Converse JSON reply as a ``ModelReply`` (the request id is in a header, not here).

    :raises ProviderError: the body has no output message.
    """
    message = (data.get("output") or {}).get("message")
    if not isinstance(message, Mapping):
        raise ProviderError(str(data.get("message") or "reply has no output message"),
                            provider=PROVIDER)
    parts: list[MessagePart] = []
    for block in message.get("content") or []:
        if "text" in block:
            parts.append(Text(block["text"]))
        elif "toolUse" in block:
            use = block["toolUse"]
            parts.append(ToolCall(use["toolUseId"], use["name"],
                                  json.dumps(use.get("input") or {}, ensure_ascii=False)))
        elif "reasoningContent" in block:
            reasoning = block["reasoningContent"]
            if "reasoningText" in reasoning:
                text = reasoning["reasoningText"]
                parts.append(Reasoning(text.get("text", ""), provider=PROVIDER,
                                       signature=text.get("signature")))
            elif "redactedContent" in reasoning:
                parts.append(Reasoning(provider=PROVIDER, data=reasoning["redactedContent"]))
    stop = data.get("stopReason")
    return ModelReply(parts=parts, usage=_usage(data.get("usage") or {}),
                      finish_reason=None if stop is None else _FINISH.get(stop, stop))


def _usage(raw: Mapping[str, Any]) -> Usage:
    return Usage(input_tokens=raw.get("inputTokens") or 0,
                 output_tokens=raw.get("outputTokens") or 0,
                 cache_read_tokens=raw.get("cacheReadInputTokens") or 0,
                 cache_write_tokens=raw.get("cacheWriteInputTokens") or 0)


async def parse_stream(chunks: AsyncIterable[bytes]) -> AsyncIterator[StreamDelta]:
    """Translate ``converse-stream`` event-stream frames into ``StreamDelta``s.

    :raises EventStreamError: a frame is corrupt (CRC) or the stream ends inside one.
    :raises RateLimited, ContextLengthExceeded, ProviderError: an exception frame.
    :raises StreamInterrupted: the stream ends before ``messageStop``.
    """
    tool_index: dict[int, int] = {}
    stop: str | None = None
    usage: Usage | None = None
    async with aclosing(iter_frames(chunks)) as items:
        async for frame in items:
            message_type = frame.header(":message-type")
            if message_type == "exception":
                raise _exception(frame.header(":exception-type") or "exception", frame.payload)
            if message_type == "error":
                raise ProviderError(f"{frame.header(':error-code')}: "
                                    f"{frame.header(':error-message')}", provider=PROVIDER)
            event = frame.header(":event-type")
            data = json.loads(frame.payload or b"{}")
            if event == "contentBlockStart":
                use = (data.get("start") or {}).get("toolUse")
                if use:
                    ordinal = len(tool_index)
                    tool_index[data.get("contentBlockIndex", ordinal)] = ordinal
                    yield ToolCallStart(ordinal, use["toolUseId"], use["name"])
            elif event == "contentBlockDelta":
                delta = data.get("delta") or {}
                if "text" in delta:
                    yield TextDelta(delta["text"])
                elif "toolUse" in delta:
                    fragment = delta["toolUse"].get("input", "")
                    if fragment:
                        yield ToolCallDelta(tool_index[data["contentBlockIndex"]], fragment)
                elif "reasoningContent" in delta:
                    reasoning = delta["reasoningContent"]
                    if "text" in reasoning:
                        yield ReasoningDelta(reasoning["text"])
                    elif "signature" in reasoning:
                        yield ReasoningDelta(signature=reasoning["signature"])
            elif event == "contentBlockStop":
                if data.get("contentBlockIndex") in tool_index:
                    yield ToolCallEnd(tool_index[data["contentBlockIndex"]])
            elif event == "messageStop":
                stop = data.get("stopReason") or "end_turn"
            elif event == "metadata":
                usage = _usage(data.get("usage") or {})
    if stop is None:
        raise StreamInterrupted("stream ended before messageStop", provider=PROVIDER)
    if usage is not None:
        yield UsageDelta(usage)
    yield FinishDelta(_FINISH.get(stop, stop))


def _exception(kind: str, payload: bytes) -> ProviderError:
    try:
        message = str(json.loads(payload).get("message") or kind)
    except (ValueError, AttributeError):
        message = kind
    text = f"{kind}: {message}"
    if kind == "throttlingException":
        return RateLimited(text, provider=PROVIDER, status=429)
    if kind == "validationException":
        lowered = message.lower()
        if "too long" in lowered or ("context" in lowered and "exceed" in lowered):
            return ContextLengthExceeded(text, provider=PROVIDER, status=400)
        return ProviderError(text, provider=PROVIDER, status=400)
    if kind == "serviceUnavailableException":
        return ProviderError(text, provider=PROVIDER, status=503)
    return ProviderError(text, provider=PROVIDER, status=500)


# --- client: endpoint and signing ---------------------------------------------------------------


class BedrockProvider(Provider):
    """``Provider`` for Bedrock: region endpoint, URL-quoted model ids, SigV4 or API-key auth.

    Credentials: ``api_key`` / ``AWS_BEARER_TOKEN_BEDROCK`` (a Bedrock API key, sent as a bearer
    token), else ``aws_access_key_id`` / ``aws_secret_access_key`` / ``aws_session_token``, else
    botocore's usual chain (environment, profile, instance role). Region: ``region``,
    ``AWS_REGION`` or ``AWS_DEFAULT_REGION``.
    """

    def __init__(self, spec: ProviderSpec, model: str, *, region: str | None = None,
                 aws_access_key_id: str | None = None, aws_secret_access_key: str | None = None,
                 aws_session_token: str | None = None, base_url: str | None = None,
                 api_key: str | None = None, **options: Any) -> None:
        self.region = (region or os.environ.get("AWS_REGION")
                       or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1")
        bearer = api_key if api_key is not None else os.environ.get("AWS_BEARER_TOKEN_BEDROCK")
        super().__init__(spec, model, api_key=bearer,
                         base_url=base_url or f"https://bedrock-runtime.{self.region}.amazonaws.com",
                         **options)
        self._credentials: Any = None
        if not bearer:
            self._credentials = _credentials(aws_access_key_id, aws_secret_access_key,
                                             aws_session_token)
            self.transport.before_send = self._sign

    def __repr__(self) -> str:
        return f"BedrockProvider({self.model}, region={self.region!r})"

    def endpoint(self, request: ModelRequest) -> tuple[str, dict[str, str]]:
        """``/model/{quoted id}/converse`` or ``…/converse-stream``."""
        action = "converse-stream" if request.stream else "converse"
        return f"/model/{quote(request.model, safe='')}/{action}", {}

    async def prepare(self, request: ModelRequest, *, stream: bool
                      ) -> tuple[ModelRequest, bytes | StreamedBody]:
        """As ``Provider.prepare``, with the body joined: SigV4 signs a hash of every byte
        (Bedrock's per-message limits keep these bodies small)."""
        request, body = await super().prepare(request, stream=stream)
        if isinstance(body, StreamedBody):
            body = await body.read()
        return request, body

    async def _sign(self, request: httpx.Request) -> None:
        from botocore.auth import SigV4Auth  # type: ignore[import-untyped]
        from botocore.awsrequest import AWSRequest  # type: ignore[import-untyped]

        aws = AWSRequest(method=request.method, url=str(request.url), data=request.content,
                         headers={"content-type": request.headers.get("content-type",
                                                                      "application/json")})
        SigV4Auth(self._credentials.get_frozen_credentials(), "bedrock",
                  self.region).add_auth(aws)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            value = aws.headers.get(name)
            if value:
                request.headers[name] = value


def _credentials(key_id: str | None, secret: str | None, token: str | None) -> Any:
    try:
        import botocore.credentials  # type: ignore[import-untyped]
        import botocore.session  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - depends on the installed extras
        raise AuthenticationError("Bedrock SigV4 signing needs botocore: install plait[bedrock]",
                                  provider=PROVIDER) from None
    if key_id and secret:
        return botocore.credentials.Credentials(key_id, secret, token)
    found = botocore.session.Session().get_credentials()
    if found is None:
        raise AuthenticationError("no AWS credentials: pass aws_access_key_id/"
                                  "aws_secret_access_key, set AWS_BEARER_TOKEN_BEDROCK, or "
                                  "configure botocore's credential chain", provider=PROVIDER)
    return found


SPEC = ProviderSpec(
    name=PROVIDER,
    wire=__name__,
    base_url="https://bedrock-runtime.us-east-1.amazonaws.com",
    env_keys=("AWS_BEARER_TOKEN_BEDROCK",),
    key_required=False,
    auth=bearer_auth,
    path="/model/{model}/converse",
    stream_path="/model/{model}/converse-stream",
    client=BedrockProvider,
    description="AWS Bedrock Converse (Claude: image/document in toolResult; Nova: image/video)",
)
register(SPEC)
