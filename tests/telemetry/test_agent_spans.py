"""Agent runs against the provider emulators, traced: invoke_agent → steps → chat and
execute_tool spans, with content capture on, and not one key or base64 run in spans or logs."""

from __future__ import annotations

import base64
import io
import json
import struct
import zlib
from collections.abc import Callable
from typing import Any

import pytest
import structlog
from opentelemetry.trace import SpanKind

import plait.logging
from plait import Agent, Image, tool
from plait.providers import RetryPolicy, connect
from plait.stores import MemoryStore
from plait.telemetry import OTelHooks, Telemetry
from plait.testing import (
    AnthropicEmulator,
    Emulator,
    GeminiEmulator,
    LoopbackServer,
    OpenAIResponsesEmulator,
    ScriptedReply,
    SpanCapture,
)

from ._scan import assert_clean, exported_text

KEYS = {
    "anthropic": "sk-ant-api03-" + "AgentTraceKeyAAAAbbbbCCCCddddEEEEffff-GG",
    "openai-responses": "sk-proj-" + "AgentTraceKeyHHHHiiiiJJJJkkkkLLLL",
    "gemini": "AIza" + "SyAgentTraceKeyMMMMnnnnOOOOppppQQQ",
}


def _png(size: int) -> bytes:
    """A real RGB PNG, stored uncompressed so its base64 is long enough to be noticed."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    rows = b"".join(b"\x00" + bytes((x * 37 + y * 11) % 256 for x in range(size * 3))
                    for y in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows, 0)) + chunk(b"IEND", b""))


FRAME = _png(24)
FRAME_B64 = base64.b64encode(FRAME).decode()


@tool
def key_frame(second: int) -> Image:
    """The video frame at ``second``."""
    return Image.from_bytes(FRAME, "image/png", name=f"frame-{second}.png")


CASES: dict[str, tuple[Callable[[], Emulator], str, str, str]] = {
    "anthropic": (lambda: AnthropicEmulator(api_key=KEYS["anthropic"]),
                  "anthropic:claude-sonnet-4-5", "", "anthropic"),
    "openai-responses": (lambda: OpenAIResponsesEmulator(api_key=KEYS["openai-responses"]),
                         "openai-responses:gpt-5", "/v1", "openai"),
    "gemini": (lambda: GeminiEmulator(api_key=KEYS["gemini"]), "gemini:gemini-2.5-flash", "",
               "gcp.gemini"),
}


@pytest.mark.parametrize("name", sorted(CASES))
async def test_traced_agent_run(name: str) -> None:
    factory, model, suffix, provider_name = CASES[name]
    emulator = factory()
    emulator.script_reply(ScriptedReply("", [("call_1", "key_frame", '{"second": 3}')],  # type: ignore[attr-defined]
                                        input_tokens=100, output_tokens=10))
    emulator.script_reply(ScriptedReply("A striped frame.", input_tokens=150,  # type: ignore[attr-defined]
                                        output_tokens=5))
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider,
                    capture_content=True)
    out = io.StringIO()
    plait.logging.configure(json=True, level="DEBUG", stream=out)
    try:
        with LoopbackServer(emulator) as server:
            def make(m: str) -> Any:
                provider = connect(m, api_key=KEYS[name], base_url=server.url + suffix)
                provider.transport.retry = RetryPolicy(max_retries=0)
                return provider

            agent = Agent(model, tools=[key_frame], store=MemoryStore(), connect=make,
                          hooks=OTelHooks(tel))
            result = await agent.run("What is at second 3? Here is the first frame.")
            await agent.aclose()
    finally:
        structlog.reset_defaults()
    assert result.output == "A striped frame."

    root = cap.span("invoke_agent AgentWorkflow")
    assert root.parent is None
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "AgentWorkflow"
    by_id = {s.context.span_id: s for s in cap.spans()}
    chats = [s for s in cap.spans() if s.name.startswith("chat ")]
    assert len(chats) == 2
    for chat in chats:
        assert chat.kind is SpanKind.CLIENT
        assert chat.attributes["gen_ai.provider.name"] == provider_name
        assert by_id[chat.parent.span_id].name == "step call_model"
        assert by_id[chat.parent.span_id].parent.span_id == root.context.span_id
    usage = sorted((c.attributes["gen_ai.usage.input_tokens"],
                    c.attributes["gen_ai.usage.output_tokens"]) for c in chats)
    assert usage == [(100, 10), (150, 5)]
    tool_span = cap.span("execute_tool key_frame")
    assert by_id[tool_span.parent.span_id].name == "step dispatch_tools"
    assert tool_span.attributes["gen_ai.tool.call.id"] == "call_1"
    result_json = json.loads(tool_span.attributes["gen_ai.tool.call.result"])
    assert result_json[0]["mime_type"] == "image/png"
    assert result_json[0]["byte_size"] == len(FRAME)
    later = max(chats, key=lambda s: s.start_time)
    parts = [p for m in json.loads(later.attributes["gen_ai.input.messages"])
             for p in m["parts"]]
    responses = [p for p in parts if p["type"] == "tool_call_response"]
    assert responses and responses[0]["id"] == "call_1"

    assert_clean(exported_text(cap.spans(), out.getvalue()), KEYS.values(), [FRAME_B64])
