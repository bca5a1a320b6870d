"""End-to-end agent runs against the provider emulators: tool call → the tool returns an image →
the next request carries it where that provider takes it; streaming events; usage and cost."""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from plait import Agent, AgentResult, Image, tool
from plait._agent_events import (
    AgentTextDelta,
    MediaRouted,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from plait.providers import RetryPolicy, connect
from plait.stores import MemoryStore
from plait.testing import (
    AnthropicEmulator,
    BedrockEmulator,
    Emulator,
    GeminiEmulator,
    LoopbackServer,
    OllamaEmulator,
    OpenAIChatEmulator,
    OpenAIResponsesEmulator,
    ScriptedReply,
)

KEY = "sk-test-agent-0123456789"


def png(width: int = 2, height: int = 2, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A real, tiny PNG (so MIME sniffing and viewers agree)."""
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


FRAME = png()


@tool
def key_frame(second: int) -> Image:
    """The video frame at ``second``."""
    return Image.from_bytes(FRAME, "image/png", name=f"frame-{second}.png")


def _anthropic(body: Any) -> bytes:
    block = body["messages"][-1]["content"][0]
    assert block["type"] == "tool_result"
    return base64.b64decode(block["content"][0]["source"]["data"])


def _responses(body: Any) -> bytes:
    output = body["input"][-1]["output"]
    image = next(item for item in output if item["type"] == "input_image")
    return base64.b64decode(image["image_url"].split(",", 1)[1])


def _gemini(body: Any) -> bytes:
    response = body["contents"][-1]["parts"][0]["functionResponse"]
    return base64.b64decode(response["parts"][0]["inlineData"]["data"])


def _chat(body: Any) -> bytes:
    # OpenAI Chat: the tool message is text; the image follows in one user message.
    assert body["messages"][-2]["role"] == "tool"
    user = body["messages"][-1]
    image = next(p for p in user["content"] if p["type"] == "image_url")
    return base64.b64decode(image["image_url"]["url"].split(",", 1)[1])


def _bedrock(body: Any) -> bytes:
    content = body["messages"][-1]["content"][0]["toolResult"]["content"]
    image = next(c["image"] for c in content if "image" in c)
    return base64.b64decode(image["source"]["bytes"])


def _ollama(body: Any) -> bytes:
    # Ollama: the tool message carries text; the image rides on a following user message.
    assert body["messages"][-2]["role"] == "tool"
    return base64.b64decode(body["messages"][-1]["images"][0])


def _mistral(body: Any) -> bytes:
    # Mistral: tool message, the dummy assistant turn it needs, then the user message.
    roles = [m["role"] for m in body["messages"][-3:]]
    assert roles == ["tool", "assistant", "user"], roles
    image = next(p for p in body["messages"][-1]["content"] if p["type"] == "image_url")
    url = image["image_url"] if isinstance(image["image_url"], str) else \
        image["image_url"]["url"]
    return base64.b64decode(url.split(",", 1)[1])


# name -> (emulator factory, model, base-url suffix, where the image must be)
CASES: dict[str, tuple[Callable[[], Emulator], str, str, Callable[[Any], bytes]]] = {
    "bedrock": (lambda: BedrockEmulator(api_key=KEY),
                "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", "", _bedrock),
    "ollama": (OllamaEmulator, "ollama:llava", "", _ollama),
    "mistral": (lambda: OpenAIChatEmulator(auth=("authorization", f"Bearer {KEY}")),
                "mistral:pixtral-large-latest", "/v1", _mistral),
    "anthropic": (lambda: AnthropicEmulator(api_key=KEY), "anthropic:claude-sonnet-4-5", "",
                  _anthropic),
    "openai-responses": (lambda: OpenAIResponsesEmulator(api_key=KEY), "openai-responses:gpt-5",
                         "/v1", _responses),
    "gemini": (lambda: GeminiEmulator(api_key=KEY), "gemini:gemini-3-pro-preview", "", _gemini),
    "openai": (lambda: OpenAIChatEmulator(auth=("authorization", f"Bearer {KEY}")),
               "openai:gpt-4.1", "/v1", _chat),
}


@pytest.fixture(params=sorted(CASES))
def setup(request: pytest.FixtureRequest) -> Iterator[tuple[str, Emulator, LoopbackServer]]:
    emulator = CASES[request.param][0]()
    with LoopbackServer(emulator) as server:
        yield request.param, emulator, server


def connector(server: LoopbackServer, suffix: str) -> Callable[[str], Any]:
    def make(model: str) -> Any:
        provider = connect(model, api_key=KEY, base_url=server.url + suffix)
        provider.transport.retry = RetryPolicy(max_retries=2, base_delay=0.01)
        return provider
    return make


async def test_tool_image_reaches_the_next_request(
        setup: tuple[str, Emulator, LoopbackServer]) -> None:
    name, emulator, server = setup
    _, model, suffix, image_in = CASES[name]
    emulator.script_reply(ScriptedReply("", [("call_1", "key_frame", '{"second": 3}')],  # type: ignore[attr-defined]
                                        input_tokens=100, output_tokens=10))
    emulator.script_reply(ScriptedReply("A red frame.", input_tokens=150, output_tokens=5))  # type: ignore[attr-defined]
    # Mistral runs the non-streaming path (its emulator streams no usage chunk).
    agent = Agent(model, tools=[key_frame], store=MemoryStore(), stream=name != "mistral",
                  connect=connector(server, suffix), prices={model: (2.0, 10.0)})
    events: list[Any] = []
    async with agent.start("What is at second 3?") as run:
        async for ev in run.events():
            events.append(ev)
        result = await run.result()
    await agent.aclose()
    assert isinstance(result, AgentResult)
    assert result.output == "A red frame." and result.turns == 2
    assert result.usage.input_tokens == 250 and result.usage.output_tokens == 15
    assert result.cost == pytest.approx((250 * 2.0 + 15 * 10.0) / 1e6)
    second = emulator.received[-1].json()
    assert image_in(second) == FRAME
    kinds = [type(ev) for ev in events]
    assert kinds.count(TurnStarted) == 2 and kinds.count(TurnFinished) == 2
    assert ToolCallStarted in kinds and ToolCallFinished in kinds
    assert "".join(ev.text for ev in events if isinstance(ev, AgentTextDelta)) == "A red frame."
    routed = [ev.move for ev in events if isinstance(ev, MediaRouted)]
    assert routed and routed[-1].action == "inline" and routed[-1].kind == "image"
    # The returned frame became a handle: the directory note lists it on the second turn.
    handle_id = result.messages[2].parts[0].output[0].handle.id  # type: ignore[union-attr]
    assert handle_id in str(second)
