"""GenAI spans: ``chat {model}``, ``execute_tool {name}``, ``invoke_agent {name}``.

A ``ChatCall`` is started before the request goes out and ended with the reply (or the error);
it is never current on its own: ``activate()`` makes it current for one stretch of code, and
``traced_stream`` activates it for each pull of a streamed reply, so no span stays current across
a ``yield``. Sampling-relevant attributes (operation, provider, model, server) are set when the
span starts.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager, contextmanager
from types import TracebackType
from typing import Any, Protocol, Self
from urllib.parse import urlsplit

from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from .._messages import (
    FinishDelta,
    ModelReply,
    ModelRequest,
    StreamDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallStart,
    ToolResult,
    Usage,
    UsageDelta,
)
from .._parts import Text
from . import _capture as cap
from . import _semconv as sc
from ._tracing import Telemetry, activate, error_type, monotonic, record_error

__all__ = ["ChatCall", "TracedStream", "agent_span", "server_of", "tool_span"]


@functools.lru_cache(maxsize=64)
def server_of(base_url: str) -> tuple[str | None, int | None]:
    """``server.address`` and ``server.port`` for a provider's base URL (default ports filled)."""
    try:
        parts = urlsplit(base_url)
        port = parts.port
    except ValueError:
        return None, None
    if port is None:
        port = {"https": 443, "http": 80}.get(parts.scheme)
    return parts.hostname, port


def _request_attributes(model: str, provider: str, server_address: str | None,
                        server_port: int | None) -> dict[str, AttributeValue]:
    attrs: dict[str, AttributeValue] = {
        sc.OPERATION_NAME: sc.OP_CHAT,
        sc.PROVIDER_NAME: provider,
        sc.REQUEST_MODEL: model,
    }
    if server_address:
        attrs[sc.SERVER_ADDRESS] = server_address
    if server_port:
        attrs[sc.SERVER_PORT] = server_port
    return attrs


class ChatCall:
    """The span and metrics of one model call; end it with ``finish``."""

    def __init__(self, telemetry: Telemetry, request: ModelRequest, *, provider: str,
                 server_address: str | None = None, server_port: int | None = None,
                 model: str | None = None, stream: bool | None = None) -> None:
        self._telemetry = telemetry
        self._start = monotonic()
        self._first_chunk: float | None = None
        self._finished = False
        self.provider = sc.provider_name(provider)
        model = model or request.model
        self._stream = request.stream if stream is None else stream
        self._metric_attrs = _request_attributes(model, self.provider, server_address,
                                                 server_port)
        self.span = telemetry.start_span(f"{sc.OP_CHAT} {model}", kind=SpanKind.CLIENT,
                                         attributes=self._metric_attrs)
        # Stream accumulation, only used when the caller feeds deltas through ``observe``.
        self._text: list[str] = []
        self._calls: dict[int, list[str]] = {}
        self._usage = Usage()
        self._finish: FinishDelta | None = None
        if self.span.is_recording():
            self._describe_request(request)

    def _describe_request(self, request: ModelRequest) -> None:
        span, options = self.span, request.options
        for name, value in ((sc.REQUEST_TEMPERATURE, options.temperature),
                            (sc.REQUEST_MAX_TOKENS, options.max_tokens),
                            (sc.REQUEST_TOP_P, options.top_p), (sc.REQUEST_SEED, options.seed)):
            if value is not None:
                span.set_attribute(name, value)
        if options.stop:
            span.set_attribute(sc.REQUEST_STOP_SEQUENCES, list(options.stop))
        if self._stream:
            span.set_attribute(sc.REQUEST_STREAM, True)
        if self._telemetry.capture_content:
            latest = self._telemetry.latest
            span.set_attribute(sc.INPUT_MESSAGES,
                               cap.input_messages_json(request.messages, latest=latest))
            if request.system:
                span.set_attribute(sc.SYSTEM_INSTRUCTIONS,
                                   cap.system_instructions_json(request.system))
            if request.tools:
                span.set_attribute(sc.TOOL_DEFINITIONS, cap.tool_definitions_json(request.tools))

    def activate(self) -> AbstractContextManager[Span]:
        """Context manager making the span current (for one pull or one request, no ``yield``)."""
        return activate(self.span)

    def chunk(self) -> None:
        """Note that a chunk arrived (the first one sets time-to-first-chunk)."""
        if self._first_chunk is None:
            self._first_chunk = monotonic()

    def observe(self, delta: StreamDelta) -> None:
        """Account for one streamed delta (text, tool calls, usage, finish)."""
        self.chunk()
        if isinstance(delta, TextDelta):
            self._text.append(delta.text)
        elif isinstance(delta, ToolCallStart):
            self._calls[delta.index] = [delta.id, delta.name]
        elif isinstance(delta, ToolCallDelta) and delta.index in self._calls:
            self._calls[delta.index].append(delta.fragment)
        elif isinstance(delta, UsageDelta):
            self._usage = delta.usage
        elif isinstance(delta, FinishDelta):
            self._finish = delta

    def streamed_reply(self) -> ModelReply:
        """The reply assembled from the observed deltas."""
        parts: list[Any] = [Text("".join(self._text))] if self._text else []
        parts += [ToolCall(id=c[0], name=c[1], arguments="".join(c[2:]) or "{}")
                  for _, c in sorted(self._calls.items())]
        fin = self._finish or FinishDelta()
        return ModelReply(parts=parts, usage=self._usage, finish_reason=fin.reason,
                          response_id=fin.response_id, model=fin.model)

    def finish(self, reply: ModelReply | None = None, error: BaseException | None = None) -> None:
        """End the span and record duration and token metrics (idempotent)."""
        if self._finished:
            return
        self._finished = True
        now = monotonic()
        metric_attrs = dict(self._metric_attrs)
        if reply is None and error is None:
            reply = self.streamed_reply()
        if reply is not None and reply.model:
            metric_attrs[sc.RESPONSE_MODEL] = reply.model
        span = self.span
        if error is not None:
            metric_attrs[sc.ERROR_TYPE] = error_type(error)
            record_error(span, error)
        if self._first_chunk is not None:
            ttfc = self._first_chunk - self._start
            span.set_attribute(sc.RESPONSE_TIME_TO_FIRST_CHUNK, ttfc)
            self._telemetry.time_to_first_chunk.record(ttfc, metric_attrs)
        if reply is not None:
            self._describe_reply(reply, metric_attrs)
        self._telemetry.operation_duration.record(now - self._start, metric_attrs)
        span.end()

    def _describe_reply(self, reply: ModelReply, metric_attrs: dict[str, AttributeValue]) -> None:
        span, usage = self.span, reply.usage
        if span.is_recording():
            if reply.model:
                span.set_attribute(sc.RESPONSE_MODEL, reply.model)
            if reply.response_id:
                span.set_attribute(sc.RESPONSE_ID, reply.response_id)
            reason = cap.finish_reason(reply.finish_reason)
            if reason:
                span.set_attribute(sc.RESPONSE_FINISH_REASONS, [reason])
            span.set_attribute(sc.USAGE_INPUT_TOKENS, usage.input_tokens)
            span.set_attribute(sc.USAGE_OUTPUT_TOKENS, usage.output_tokens)
            cache_write = (sc.USAGE_CACHE_WRITE_INPUT_TOKENS if self._telemetry.latest
                           else sc.USAGE_CACHE_CREATION_INPUT_TOKENS)
            for name, value in ((sc.USAGE_CACHE_READ_INPUT_TOKENS, usage.cache_read_tokens),
                                (cache_write, usage.cache_write_tokens),
                                (sc.USAGE_REASONING_OUTPUT_TOKENS, usage.reasoning_tokens)):
                if value:
                    span.set_attribute(name, value)
            if self._telemetry.capture_content:
                span.set_attribute(sc.OUTPUT_MESSAGES,
                                   cap.output_messages_json(reply, latest=self._telemetry.latest))
        if usage.input_tokens or usage.output_tokens:
            self._telemetry.record_tokens(usage, metric_attrs)


class TracedStream:
    """An async iterator over a model's deltas whose span is current only during each pull.

    Ends the call's span when the stream ends, fails, or is closed early (``aclose``).
    """

    def __init__(self, call: ChatCall, deltas: AsyncIterator[StreamDelta]) -> None:
        self._call = call
        self._deltas = deltas

    def __aiter__(self) -> TracedStream:
        return self

    async def __anext__(self) -> StreamDelta:
        try:
            with self._call.activate():
                delta = await self._deltas.__anext__()
        except StopAsyncIteration:
            self._call.finish()
            raise
        except BaseException as exc:
            self._call.finish(error=exc)
            raise
        self._call.observe(delta)
        return delta

    async def aclose(self) -> None:
        """Close the underlying stream and end the span (an early close is not an error)."""
        close = getattr(self._deltas, "aclose", None)
        try:
            if close is not None:
                await close()
        finally:
            self._call.finish()

    def __del__(self) -> None:
        # Dropped without being exhausted or closed: end the span with what was seen, rather
        # than never exporting it.
        call = getattr(self, "_call", None)
        if call is not None:
            call.finish()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if exc is not None:
            self._call.finish(error=exc)
        await self.aclose()


class ToolRecorder(Protocol):
    """What ``tool_span`` yields: call it with the tool's result (and exception, if any)."""

    def __call__(self, result: ToolResult, error: BaseException | None = None) -> None: ...


@contextmanager
def tool_span(telemetry: Telemetry, call: ToolCall, *, tool_type: str = "function",
              description: str | None = None) -> Iterator[ToolRecorder]:
    """``execute_tool {name}``, current inside the block so the tool's own spans nest under it.

    The yielded recorder takes the ``ToolResult`` (``recorder(result, error)``) to mark tool
    errors (``error.type`` is the exception's class when given, else ``tool_error``) and to
    capture the result when content capture is on.
    """
    attrs: dict[str, AttributeValue] = {
        sc.OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.TOOL_NAME: call.name,
        sc.TOOL_CALL_ID: call.id, sc.TOOL_TYPE: tool_type}
    if description:
        attrs[sc.TOOL_DESCRIPTION] = description
    with telemetry.span(f"{sc.OP_EXECUTE_TOOL} {call.name}", attributes=attrs) as span:
        if telemetry.capture_content and span.is_recording():
            span.set_attribute(sc.TOOL_CALL_ARGUMENTS, cap.tool_arguments_json(call))

        def record(result: ToolResult, error: BaseException | None = None) -> None:
            if not span.is_recording():
                return
            if error is not None:
                record_error(span, error)  # the model sees it as a tool error and carries on
            elif result.is_error:
                span.set_attribute(sc.ERROR_TYPE, "tool_error")
                span.set_status(Status(StatusCode.ERROR, "tool returned an error result"))
            if telemetry.capture_content:
                span.set_attribute(sc.TOOL_CALL_RESULT,
                                   cap.tool_result_json(result, latest=telemetry.latest))

        yield record


def agent_span(telemetry: Telemetry, name: str, *, model: str | None = None,
               provider: str | None = None, agent_id: str | None = None,
               conversation_id: str | None = None) -> AbstractContextManager[Span]:
    """``invoke_agent {name}`` (INTERNAL: the agent runs in this process), current in the block."""
    attrs: dict[str, AttributeValue] = {sc.OPERATION_NAME: sc.OP_INVOKE_AGENT,
                                        sc.AGENT_NAME: name}
    if model:
        attrs[sc.REQUEST_MODEL] = model
    if provider:
        attrs[sc.PROVIDER_NAME] = sc.provider_name(provider)
    if agent_id:
        attrs[sc.AGENT_ID] = agent_id
    if conversation_id:
        attrs[sc.CONVERSATION_ID] = conversation_id
    return telemetry.span(f"{sc.OP_INVOKE_AGENT} {name}", attributes=attrs)
