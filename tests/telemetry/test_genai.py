"""chat / execute_tool / invoke_agent spans and the GenAI metrics, on asyncio and trio."""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from plait import (
    FinishDelta,
    GenerationOptions,
    Image,
    Message,
    ModelReply,
    ModelRequest,
    ProviderError,
    StreamDelta,
    Text,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallStart,
    ToolResult,
    Usage,
    UsageDelta,
)
from plait.telemetry import ChatCall, Telemetry, TracedStream, agent_span, tool_span
from plait.telemetry._semconv import DURATION_BUCKETS, TOKEN_BUCKETS
from plait.testing import SpanCapture

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def _request(stream: bool = False) -> ModelRequest:
    return ModelRequest(
        model="claude-test", stream=stream, system="be brief",
        messages=[Message.user("describe", Image.from_bytes(PNG, "image/png"))],
        options=GenerationOptions(temperature=0.2, max_tokens=64, stop=["END"]))


def test_chat_span_attributes_and_metrics() -> None:
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider,
                    capture_content=True)
    call = ChatCall(tel, _request(), provider="anthropic", server_address="127.0.0.1",
                    server_port=8080)
    call.finish(ModelReply(parts=[Text("a png")], usage=Usage(10, 5, cache_read_tokens=4),
                           finish_reason="end_turn", response_id="msg_1", model="claude-test-1"))
    span = cap.span("chat claude-test")
    assert span.kind is SpanKind.CLIENT
    attrs = dict(span.attributes)
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "anthropic"
    assert attrs["gen_ai.request.model"] == "claude-test"
    assert attrs["gen_ai.request.temperature"] == 0.2
    assert attrs["gen_ai.request.max_tokens"] == 64
    assert attrs["gen_ai.request.stop_sequences"] == ("END",)
    assert attrs["gen_ai.response.model"] == "claude-test-1"
    assert attrs["gen_ai.response.id"] == "msg_1"
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs["gen_ai.usage.input_tokens"] == 10
    assert attrs["gen_ai.usage.output_tokens"] == 5
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == 4
    assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == 8080
    assert "gen_ai.system" not in attrs
    assert '"content":"be brief"' in attrs["gen_ai.system_instructions"]
    assert base64.b64encode(PNG).decode() not in attrs["gen_ai.input.messages"]
    assert '"a png"' in attrs["gen_ai.output.messages"]

    tokens = cap.metric_points("gen_ai.client.token.usage")
    by_type = {p.attributes["gen_ai.token.type"]: p for p in tokens}
    assert by_type["input"].sum == 10 and by_type["output"].sum == 5
    assert tuple(by_type["input"].explicit_bounds) == tuple(float(b) for b in TOKEN_BUCKETS)
    assert by_type["input"].attributes["gen_ai.provider.name"] == "anthropic"
    (duration,) = cap.metric_points("gen_ai.client.operation.duration")
    assert tuple(duration.explicit_bounds) == DURATION_BUCKETS
    assert duration.attributes["gen_ai.response.model"] == "claude-test-1"
    assert duration.count == 1 and duration.sum >= 0


def test_content_is_not_captured_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    ChatCall(tel, _request(), provider="openai").finish(ModelReply(parts=[Text("x")]))
    attrs = cap.span("chat claude-test").attributes
    assert not any(k in attrs for k in ("gen_ai.input.messages", "gen_ai.output.messages",
                                        "gen_ai.system_instructions"))
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    tel = Telemetry(tracer_provider=cap.tracer_provider)
    ChatCall(tel, _request(), provider="openai").finish(ModelReply(parts=[Text("x")]))
    assert "gen_ai.input.messages" in cap.spans()[-1].attributes


def test_failed_call_sets_error_type_without_the_secret() -> None:
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    call = ChatCall(tel, _request(), provider="gemini")
    key = "AIza" + "SyB1234567890abcdefghijklmnopqrstuv"
    call.finish(error=ProviderError(f"bad request for https://x.example/?key={key}",
                                    provider="gemini", status=400))
    span = cap.span("chat claude-test")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "plait.ProviderError"
    assert span.attributes["gen_ai.provider.name"] == "gcp.gemini"
    (event,) = span.events
    assert key not in str(event.attributes) and key not in (span.status.description or "")
    (duration,) = cap.metric_points("gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == "plait.ProviderError"


async def _deltas(tracer: trace.Tracer) -> AsyncIterator[StreamDelta]:
    with tracer.start_as_current_span("http chunk"):  # the transport's own span, per pull
        pass
    yield TextDelta("Hel")
    yield TextDelta("lo")
    yield ToolCallStart(0, "call_7", "lookup")
    yield ToolCallDelta(0, '{"q": ')
    yield ToolCallDelta(0, '"x"}')
    yield UsageDelta(Usage(7, 3))
    yield FinishDelta("tool_use", "resp_9", "m-1")


async def test_stream_span_is_current_only_while_pulling(caplog: pytest.LogCaptureFixture) -> None:
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider,
                    capture_content=True)
    tracer = cap.tracer_provider.get_tracer("test")
    with tracer.start_as_current_span("caller") as caller:
        call = ChatCall(tel, _request(stream=True), provider="openai")
        seen = []
        async for delta in TracedStream(call, _deltas(tracer)):
            # Between pulls the caller's span is current, never the chat span.
            assert trace.get_current_span() is caller
            seen.append(delta)
    assert len(seen) == 7
    chat = cap.span("chat claude-test")
    http = cap.span("http chunk")
    assert http.parent.span_id == chat.context.span_id
    assert chat.parent.span_id == caller.get_span_context().span_id
    attrs = chat.attributes
    assert attrs["gen_ai.request.stream"] is True
    assert attrs["gen_ai.usage.input_tokens"] == 7 and attrs["gen_ai.response.id"] == "resp_9"
    assert attrs["gen_ai.response.time_to_first_chunk"] >= 0
    assert '"arguments":{"q":"x"}' in attrs["gen_ai.output.messages"]
    assert cap.metric_points("gen_ai.client.operation.time_to_first_chunk")[0].count == 1
    assert "Failed to detach context" not in caplog.text


async def test_breaking_out_of_a_stream_logs_no_context_error(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    tracer = cap.tracer_provider.get_tracer("test")
    before = trace.get_current_span()
    stream = TracedStream(ChatCall(tel, _request(stream=True), provider="openai"),
                          _deltas(tracer))
    async with stream:
        async for _ in stream:
            break
    assert trace.get_current_span() is before
    assert cap.span("chat claude-test").end_time is not None
    assert "Failed to detach context" not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_tool_span_is_parent_of_the_tools_own_spans_in_child_tasks() -> None:
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider, capture_content=True)
    tracer = cap.tracer_provider.get_tracer("tool")

    async def tool_body() -> None:
        with tracer.start_as_current_span("tool internal"):
            await anyio.sleep(0)

    with agent_span(tel, "helper", model="gpt-x", provider="openai"):
        call = ToolCall("call_1", "lookup", '{"q": 1}')
        with tool_span(tel, call, description="looks up") as record:
            async with anyio.create_task_group() as tg:
                tg.start_soon(tool_body)
            record(ToolResult("call_1", "lookup", [Text("found")]))
        with tool_span(tel, ToolCall("call_2", "broken")) as record:
            record(ToolResult("call_2", "broken", [Text("no such id")], is_error=True))
        with pytest.raises(RuntimeError), tool_span(tel, ToolCall("call_3", "boom")):
            raise RuntimeError("boom")
    agent = cap.span("invoke_agent helper")
    tool = cap.span("execute_tool lookup")
    inner = cap.span("tool internal")
    assert inner.parent.span_id == tool.context.span_id
    assert tool.parent.span_id == agent.context.span_id
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.agent.name"] == "helper"
    assert dict(tool.attributes) == {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.id": "call_1", "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "looks up", "gen_ai.tool.call.arguments": '{"q":1}',
        "gen_ai.tool.call.result": '"found"'}
    broken = cap.span("execute_tool broken")
    assert broken.status.status_code is StatusCode.ERROR
    assert broken.attributes["error.type"] == "tool_error"
    boom = cap.span("execute_tool boom")
    assert boom.attributes["error.type"] == "RuntimeError"
    assert boom.status.status_code is StatusCode.ERROR


def test_latest_experimental_conventions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "http, gen_ai_latest_experimental")
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    assert tel.latest
    call = ChatCall(tel, _request(), provider="moonshot")
    call.finish(ModelReply([Text("x")], Usage(100, 40, cache_read_tokens=60, cache_write_tokens=10,
                                               reasoning_tokens=25)))
    attrs = cap.span("chat claude-test").attributes
    assert attrs["gen_ai.usage.cache_write.input_tokens"] == 10
    assert "gen_ai.usage.cache_creation.input_tokens" not in attrs
    assert attrs["gen_ai.provider.name"] == "moonshot_ai"
    assert cap.metric_points("gen_ai.client.token.usage") == []

    def sums(metric: str, key: str) -> dict[str, int]:
        return {p.attributes[key]: p.value for p in cap.metric_points(metric)}

    assert sums("gen_ai.client.inference.tokens", "gen_ai.token.type") == {
        "input": 100, "output": 40}
    assert sums("gen_ai.client.inference.input_tokens_by_cache", "gen_ai.token.cache") == {
        "uncached": 30, "read": 60, "write": 10}
    assert sums("gen_ai.client.inference.output_tokens_by_phase", "gen_ai.token.phase") == {
        "response": 15, "reasoning": 25}
    from plait.telemetry import OTelHooks

    hooks = OTelHooks(tel)
    hooks.run_finished(hooks.run_started("W", "r"), None)
    (run,) = cap.metric_points("gen_ai.workflow.duration")
    assert run.attributes["gen_ai.workflow.name"] == "W" and run.count == 1


def test_v141_default_has_no_latest_only_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    ChatCall(tel, _request(), provider="openai").finish(
        ModelReply([Text("x")], Usage(5, 5, cache_write_tokens=2)))
    assert cap.span("chat claude-test").attributes["gen_ai.usage.cache_creation.input_tokens"] == 2
    assert cap.metric_points("gen_ai.client.inference.tokens") == []
    assert len(cap.metric_points("gen_ai.client.token.usage")) == 2


def test_tool_error_with_exception_names_its_class() -> None:
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider)
    with tool_span(tel, ToolCall("c", "div")) as record:
        record(ToolResult("c", "div", [Text("Tool 'div' failed")], is_error=True),
               ZeroDivisionError("division by zero"))
    span = cap.span("execute_tool div")
    assert span.attributes["error.type"] == "ZeroDivisionError"
    assert span.status.status_code is StatusCode.ERROR
    assert span.events[0].attributes["exception.message"] == "division by zero"


async def test_a_dropped_stream_still_ends_its_span() -> None:
    import gc

    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider)

    async def deltas() -> AsyncIterator[StreamDelta]:
        yield TextDelta("a")
        yield TextDelta("b")

    inner = deltas()
    stream = TracedStream(ChatCall(tel, _request(stream=True), provider="openai"), inner)
    assert await stream.__anext__() == TextDelta("a")
    del stream
    gc.collect()
    span = cap.span("chat claude-test")
    assert span.end_time is not None
    await inner.aclose()
