"""The OpenAI-compatible quirks: Mistral (validated with the mistralai SDK models), Azure
deployment URLs and ``api-key``, fal's ``Authorization: Key``, Groq limits, id rules."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from _native_matrix import HANDLE, conversations
from mistralai.client import models as mistral_models

from plait import (
    ContentRejected,
    Document,
    GenerationOptions,
    Image,
    Message,
    ModelRequest,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from plait.providers import capabilities_for, connect, find_violations, provider_names
from plait.providers.openai_compat import GROQ, MISTRAL, mistral_tool_id
from plait.testing import OpenAIChatEmulator, ScriptedReply

TOOLS = [ToolSpec("get_file", "Fetch a file", {"type": "object", "properties": {}})]


def assert_nothing_dropped(sent: Any, kept: Any, where: str = "body") -> None:
    """pydantic models ignore unknown keys: every key we sent must survive validation."""
    if isinstance(sent, dict):
        assert isinstance(kept, dict), where
        missing = set(sent) - set(kept)
        assert not missing, f"{where}: keys the SDK model does not know: {missing}"
        for key, value in sent.items():
            assert_nothing_dropped(value, kept[key], f"{where}.{key}")
    elif isinstance(sent, list):
        assert isinstance(kept, list) and len(kept) == len(sent), where
        for i, (a, b) in enumerate(zip(sent, kept, strict=True)):
            assert_nothing_dropped(a, b, f"{where}[{i}]")


def _mistral(messages: list[Message], *, stream: bool = False) -> dict[str, Any]:
    return MISTRAL.build_request(ModelRequest(
        model="mistral-medium-latest", messages=messages, tools=TOOLS, tool_choice="auto",
        system="Be brief.", stream=stream, options=GenerationOptions(max_tokens=32, seed=3)))


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("convo", sorted(conversations()))
def test_mistral_matrix_validates_with_mistralai_models(convo: str, stream: bool) -> None:
    body = _mistral(conversations()[convo], stream=stream)
    model = (mistral_models.ChatCompletionStreamRequest if stream
             else mistral_models.ChatCompletionRequest)
    validated = model.model_validate(body)
    assert_nothing_dropped(body, validated.model_dump(by_alias=True, exclude_unset=True))
    roles = [m["role"] for m in body["messages"]]
    # A user message never directly follows a tool message: the bridge turn sits between.
    for before, after in itertools.pairwise(roles):
        assert (before, after) != ("tool", "user")
    for message in body["messages"]:
        for call in message.get("tool_calls") or []:
            assert len(call["id"]) == 9 and call["id"].isalnum()
        if message["role"] == "tool":
            assert len(message["tool_call_id"]) == 9


def test_mistral_bridge_turn_and_document_url() -> None:
    body = _mistral(conversations()["tool_pdf"])
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert body["messages"][4] == {"role": "assistant", "content": "OK"}
    follow = body["messages"][5]["content"]
    assert follow[1]["type"] == "document_url"
    assert follow[1]["document_url"].startswith("data:application/pdf;base64,JVBER")
    assert body["random_seed"] == 3 and body["max_tokens"] == 32


def test_mistral_ids_are_stable_and_paired() -> None:
    assert mistral_tool_id("0G84QFMp3") == "0G84QFMp3"
    mapped = mistral_tool_id("call_001")
    assert mapped == mistral_tool_id("call_001") != mistral_tool_id("call_002")
    body = _mistral(conversations()["one_tool_call"])
    assert body["messages"][2]["tool_calls"][0]["id"] == mapped
    assert body["messages"][3]["tool_call_id"] == mapped


def test_mistral_text_models_turn_images_into_notes() -> None:
    body = MISTRAL.build_request(ModelRequest(model="codestral-latest", messages=[
        Message.user("see", Image.from_bytes(b"x", "image/png", name="a.png"))]))
    assert "[image omitted: mistral (text)" in str(body["messages"][0]["content"])


def test_every_builtin_provider_resolves() -> None:
    names = provider_names()
    for name in ("openai", "azure", "mistral", "groq", "deepseek", "together", "fireworks",
                 "perplexity", "xai", "openrouter", "fal", "ollama"):
        assert name in names
        assert capabilities_for(name, "some-model").provider == name


def test_groq_limits_are_checked_before_sending() -> None:
    caps = capabilities_for("groq", "meta-llama/llama-4-scout-17b-16e-instruct")
    images = [Image.from_bytes(bytes([i]) * 10, "image/png") for i in range(6)]
    violations = find_violations([Message.user("many", *images)], caps)
    assert [v.limit for v in violations] == ["5 image items per request"]
    big = Image.from_bytes(b"\0" * (3 * 1024 * 1024 + 1), "image/jpeg")
    assert "bytes per request" in find_violations([Message.user(big)], caps)[0].limit


def test_xai_takes_only_jpeg_and_png() -> None:
    caps = capabilities_for("xai", "grok-4")
    webp = Image.from_bytes(b"RIFF", "image/webp", name="w.webp")
    (violation,) = find_violations([Message.user(webp)], caps)
    assert "image/webp" in violation.message and "image/png" in violation.limit


async def test_azure_uses_deployment_url_api_version_and_api_key_header() -> None:
    emulator = OpenAIChatEmulator(ScriptedReply("from azure"), auth=("api-key", "az-key"))
    with emulator.serve() as server:
        async with connect("azure:my-gpt4o", api_key="az-key", base_url=server.url,
                           api_version="2024-10-21") as llm:
            reply = await llm.complete(ModelRequest(model="", messages=[Message.user("hi")]))
    assert reply.text == "from azure"
    (received,) = emulator.received
    assert received.path == "/openai/deployments/my-gpt4o/chat/completions"
    assert received.query == {"api-version": ["2024-10-21"]}
    assert received.header("authorization") is None


async def test_fal_authorization_key_scheme() -> None:
    emulator = OpenAIChatEmulator(ScriptedReply("from fal"), auth=("authorization", "Key fk"))
    with emulator.serve() as server:
        async with connect("fal:google/gemini-2.5-flash", api_key="fk",
                           base_url=server.url + "/openrouter/router/openai/v1") as llm:
            reply = await llm.complete(ModelRequest(model="", messages=[Message.user("hi")]))
    assert reply.text == "from fal"
    assert emulator.received[0].path == "/openrouter/router/openai/v1/chat/completions"
    assert emulator.received[0].json()["model"] == "google/gemini-2.5-flash"


async def test_mistral_end_to_end_with_tool_media() -> None:
    emulator = OpenAIChatEmulator(ScriptedReply("seen", input_tokens=3))
    call = ToolCall("abcdefghi", "get_file")
    messages = [Message.user("go"), Message.assistant(call),
                Message("tool", [ToolResult(call.id, call.name, [
                    Text("see"), Document.from_bytes(b"%PDF-1.4", "application/pdf")])])]
    with emulator.serve() as server:
        async with connect("mistral:mistral-small-latest", api_key="mk",
                           base_url=server.url) as llm:
            reply = await llm.complete(ModelRequest(model="", messages=messages))
    assert reply.text == "seen" and reply.usage.input_tokens == 3
    sent = emulator.received[0].json()
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "tool", "assistant",
                                                     "user"]
    assert emulator.received[0].header("authorization") == "Bearer mk"


def test_unsupported_kinds_are_not_violations_but_unresolved_handles_are_errors() -> None:
    caps = capabilities_for("deepseek", "deepseek-chat")
    assert not caps.accepts(Image.kind)
    assert find_violations([Message.user(Image.from_bytes(b"x" * 10, "image/bmp"))], caps) == []
    with pytest.raises(ContentRejected, match="no source"):
        GROQ.build_request(ModelRequest(model="meta-llama/llama-4-scout",
                                        messages=[Message.user(Image.from_handle(HANDLE))]))


@pytest.mark.parametrize("name", ["openai", "groq", "deepseek", "together", "fireworks",
                                  "perplexity", "xai", "openrouter", "mistral"])
async def test_each_bearer_provider_end_to_end(name: str) -> None:
    emulator = OpenAIChatEmulator(ScriptedReply(f"hi from {name}", [("c1", "get_file", "{}")]),
                                  auth=("authorization", "Bearer key-123"))
    request = ModelRequest(model="", messages=[Message.user("hi")], tools=TOOLS)
    with emulator.serve() as server:
        async with connect(f"{name}:model-x", api_key="key-123", base_url=server.url) as llm:
            reply = await llm.complete(request)
            deltas = [d async for d in llm.stream(request)]
    assert reply.text == f"hi from {name}" and reply.tool_calls[0].name == "get_file"
    streamed = "".join(getattr(d, "text", "") for d in deltas)
    assert streamed == f"hi from {name}"
    plain, stream = (r.json() for r in emulator.received)
    assert plain["model"] == stream["model"] == "model-x"
    assert stream["stream"] is True
    assert all(r.path == "/chat/completions" for r in emulator.received)
