"""``chat {model}`` spans around real provider calls, against the loopback emulators."""

from __future__ import annotations

import base64
import gc
import io
import json
import logging
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import structlog
from opentelemetry.trace import SpanKind, StatusCode

import plait.logging
from plait import (
    Event,
    FinishDelta,
    Image,
    Message,
    ModelRequest,
    ProviderError,
    StartEvent,
    StopEvent,
    TextDelta,
    Workflow,
    step,
)
from plait.providers import connect
from plait.providers._transport import RetryPolicy
from plait.telemetry import OTelHooks, Telemetry, use
from plait.testing import (
    AnthropicEmulator,
    Emulator,
    GeminiEmulator,
    LoopbackServer,
    OpenAIChatEmulator,
    ScriptedReply,
    SpanCapture,
    rate_limited,
    server_error,
)

from ._scan import assert_clean, exported_text

KEYS = {
    "anthropic": "sk-ant-api03-" + "T3lem3tryK3yAAAAbbbbCCCCddddEEEEffff-GGGG",
    "openai": "sk-proj-" + "T3lem3tryK3yHHHHiiiiJJJJkkkkLLLL",
    "gemini": "AIza" + "SyT3lem3tryK3yMMMMnnnnOOOOppppQQQQ",
}
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
PNG_B64 = base64.b64encode(PNG).decode()
REPLY = ScriptedReply("Looks like a chart.", input_tokens=21, output_tokens=9)

# name -> (emulator factory, model string, base-url suffix, expected gen_ai.provider.name)
CASES: dict[str, tuple[Callable[[], Emulator], str, str, str]] = {
    "anthropic": (lambda: AnthropicEmulator(REPLY, api_key=KEYS["anthropic"]),
                  "anthropic:claude-sonnet-4-5", "", "anthropic"),
    "openai": (lambda: OpenAIChatEmulator(REPLY, auth=("authorization",
                                                       f"Bearer {KEYS['openai']}")),
               "openai:gpt-4.1-mini", "/v1", "openai"),
    "gemini": (lambda: GeminiEmulator(REPLY, api_key=KEYS["gemini"]),
               "gemini:gemini-2.5-flash", "", "gcp.gemini"),
}


def _connect(name: str, server: LoopbackServer, **options: Any) -> Any:
    _, model, suffix, _ = CASES[name]
    provider = connect(model, base_url=server.url + suffix, api_key=KEYS[name], **options)
    provider.transport.retry = RetryPolicy(max_retries=options.get("max_retries", 2),
                                           base_delay=0.01, max_retry_after=5)
    return provider


def _request() -> ModelRequest:
    return ModelRequest("", [Message.user("what is this?", Image.from_bytes(PNG, "image/png"))])


@pytest.mark.parametrize("name", sorted(CASES))
async def test_complete_and_stream_spans(name: str) -> None:
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    with LoopbackServer(CASES[name][0]()) as server, use(tel):
        async with _connect(name, server) as llm:
            reply = await llm.complete(_request())
            deltas = [d async for d in llm.stream(_request())]
    assert reply.text == "Looks like a chart."
    assert isinstance(deltas[-1], FinishDelta)
    model = CASES[name][1].split(":", 1)[1]
    complete, streamed = [s for s in cap.spans() if s.name == f"chat {model}"]
    port = int(server.url.rsplit(":", 1)[1])
    for span in (complete, streamed):
        attrs = span.attributes
        assert span.kind is SpanKind.CLIENT
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.provider.name"] == CASES[name][3]
        assert attrs["gen_ai.request.model"] == model
        assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == port
        assert attrs["gen_ai.usage.input_tokens"] == 21
        assert attrs["gen_ai.usage.output_tokens"] == 9
        assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
        assert span.status.status_code is StatusCode.UNSET
    assert "gen_ai.request.stream" not in complete.attributes
    assert streamed.attributes["gen_ai.request.stream"] is True
    assert streamed.attributes["gen_ai.response.time_to_first_chunk"] > 0
    durations = cap.metric_points("gen_ai.client.operation.duration")
    assert sum(p.count for p in durations) == 2


async def test_provider_errors_are_recorded(caplog: pytest.LogCaptureFixture) -> None:
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    emulator = OpenAIChatEmulator(REPLY)
    emulator.script(rate_limited(), server_error(503))
    with LoopbackServer(emulator) as server, use(tel):
        async with _connect("openai", server, max_retries=0) as llm:
            with pytest.raises(ProviderError):
                await llm.complete(_request())
            with pytest.raises(ProviderError):
                async for _ in llm.stream(_request()):
                    pass
    first, second = cap.spans()
    assert first.attributes["error.type"] == "plait.RateLimited"
    assert first.status.status_code is StatusCode.ERROR
    assert second.attributes["error.type"] == "plait.ProviderError"
    (point,) = [p for p in cap.metric_points("gen_ai.client.operation.duration")
                if p.attributes.get("error.type") == "plait.RateLimited"]
    assert point.count == 1


# httpx leaves its body generators unexhausted when a streamed response is closed early, and
# trio reports them as unraisable ResourceWarnings when they are collected, possibly after the
# test body; the same happens with no tracing at all (providers' transport). Warnings raised
# inside the test are still checked below.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_breaking_out_of_a_model_stream_ends_the_span_cleanly(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)  # DEBUG records would keep httpx frames alive
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider)
    long_reply = ScriptedReply("word " * 200)
    # httpx's own body generators are left unexhausted when a response is closed early, and
    # trio reports each one as a ResourceWarning when it is collected (the same happens without
    # tracing). Record warnings here and allow only those.
    async def read_one_delta() -> None:
        with LoopbackServer(AnthropicEmulator(long_reply)) as server, use(tel):
            async with _connect("anthropic", server) as llm:
                stream = llm.stream(_request())
                async for delta in stream:
                    if isinstance(delta, TextDelta):
                        break
                await stream.aclose()  # type: ignore[attr-defined]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await read_one_delta()
        gc.collect()
    unexpected = [w for w in caught if not (issubclass(w.category, ResourceWarning)
                                           and "'httpx." in str(w.message))]
    assert unexpected == []
    (span,) = cap.spans()
    assert span.end_time is not None
    assert span.status.status_code is StatusCode.UNSET
    assert "Failed to detach context" not in caplog.text


class Ask(StartEvent):
    provider: str


class Asked(Event):
    text: str


class Vision(Workflow):
    base_url: str = ""

    @step
    async def ask(self, ev: Ask) -> Asked:
        plait.logging.get_logger().info("asking", headers={"x-api-key": KEYS["anthropic"]},
                                        url=f"{self.base_url}/v1beta/models?key={KEYS['gemini']}")
        name = ev.provider
        _, model, suffix, _ = CASES[name]
        async with connect(model, base_url=self.base_url + suffix, api_key=KEYS[name],
                           max_retries=0) as llm:
            reply = await llm.complete(_request())
            text = "".join([d.text async for d in llm.stream(_request())
                            if isinstance(d, TextDelta)])
        return Asked(text=reply.text + text)

    @step
    async def done(self, ev: Asked) -> StopEvent:
        return StopEvent(result=ev.text)


@pytest.mark.parametrize("name", sorted(CASES))
async def test_no_key_and_no_base64_in_spans_or_logs_of_a_traced_run(name: str) -> None:
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider,
                    capture_content=True)
    out = io.StringIO()
    plait.logging.configure(json=True, level="DEBUG", stream=out)
    try:
        with LoopbackServer(CASES[name][0]()) as server:
            wf = Vision(hooks=OTelHooks(tel))
            wf.base_url = server.url
            assert await wf.run(Ask(provider=name)) == "Looks like a chart." * 2
    finally:
        structlog.reset_defaults()
    chat = [s for s in cap.spans() if s.name.startswith("chat ")]
    assert len(chat) == 2
    ask = cap.span("step ask")
    assert all(s.parent.span_id == ask.context.span_id for s in chat)
    assert PNG_B64[:40] not in chat[0].attributes["gen_ai.input.messages"]
    assert json.loads(chat[0].attributes["gen_ai.input.messages"])[0]["parts"][1]["byte_size"] \
        == len(PNG)
    blob = exported_text(cap.spans(), out.getvalue())
    assert '"run_id"' in blob and "[REDACTED]" in blob
    assert_clean(blob, KEYS.values(), [PNG_B64])
