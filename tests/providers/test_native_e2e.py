"""End to end through ``connect`` → preflight → serializer → transport → loopback emulator, for
the four native-media APIs: replies, streams, retries (429 with Retry-After, 5xx), cut streams,
timeouts, auth, and what actually went over the wire."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _native_matrix import PNG, conversations

from plait import (
    AuthenticationError,
    ContextLengthExceeded,
    Message,
    ModelRequest,
    ProviderError,
    ProviderFileSource,
    ProviderTimeout,
    RateLimited,
    StreamInterrupted,
    Text,
    ToolCall,
    ToolSpec,
)
from plait.providers import Provider, RetryPolicy, Timeouts, accumulate, connect
from plait.testing import (
    AnthropicEmulator,
    BedrockEmulator,
    Emulator,
    GeminiEmulator,
    LoopbackServer,
    OpenAIResponsesEmulator,
    Response,
    ScriptedReply,
    rate_limited,
    server_error,
    slow,
)

KEY = "sk-test-0123456789abcdef"
AKID, SECRET = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
TOOLS = [ToolSpec("get_file", "Fetch a file", {"type": "object",
                                               "properties": {"path": {"type": "string"}}})]
REPLY = ScriptedReply("Here is the chart summary.",
                      [("call_a1", "get_file", '{"path": "a.png"}'),
                       ("call_b2", "get_file", '{"path": "b.pdf"}')],
                      reasoning="First look at the image.", input_tokens=40, output_tokens=9)


def _inside_anthropic(body: Any) -> None:
    block = body["messages"][2]["content"][0]
    assert block["type"] == "tool_result" and block["content"][0]["type"] == "image"
    assert base64.b64decode(block["content"][0]["source"]["data"]) == PNG


def _inside_responses(body: Any) -> None:
    output = body["input"][-1]["output"]
    assert output[0]["image_url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()


def _inside_gemini(body: Any) -> None:
    response = body["contents"][2]["parts"][0]["functionResponse"]
    assert base64.b64decode(response["parts"][0]["inlineData"]["data"]) == PNG


def _inside_bedrock(body: Any) -> None:
    content = body["messages"][2]["content"][0]["toolResult"]["content"]
    assert base64.b64decode(content[0]["image"]["source"]["bytes"]) == PNG


# name -> (emulator factory, model string, base-url suffix, connect options, media check)
CASES: dict[str, tuple[Callable[[], Emulator], str, str, dict[str, Any],
                       Callable[[Any], None]]] = {
    "anthropic": (lambda: AnthropicEmulator(REPLY, api_key=KEY),
                  "anthropic:claude-sonnet-4-5", "", {"api_key": KEY}, _inside_anthropic),
    "openai-responses": (lambda: OpenAIResponsesEmulator(REPLY, api_key=KEY),
                         "openai-responses:gpt-5", "/v1", {"api_key": KEY}, _inside_responses),
    "gemini": (lambda: GeminiEmulator(REPLY, api_key=KEY), "gemini:gemini-3-pro-preview", "",
               {"api_key": KEY}, _inside_gemini),
    "bedrock": (lambda: BedrockEmulator(REPLY, sigv4=(AKID, SECRET)),
                "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", "",
                {"aws_access_key_id": AKID, "aws_secret_access_key": SECRET,
                 "region": "eu-west-1"}, _inside_bedrock),
}
NAMES = sorted(CASES)


class Setup:
    def __init__(self, name: str, server: LoopbackServer, emulator: Emulator) -> None:
        self.name = name
        self.server = server
        self.emulator = emulator
        _, self.model, self.suffix, self.options, self.check_media = CASES[name]

    def connect(self, **options: Any) -> Provider:
        merged = {**self.options, **options}
        provider = connect(self.model, base_url=self.server.url + self.suffix, **merged)
        provider.transport.retry = RetryPolicy(max_retries=merged.get("max_retries", 2),
                                               base_delay=0.01, max_retry_after=5)
        return provider


ALL = pytest.mark.parametrize("native", NAMES, indirect=True)


@pytest.fixture
def native(request: pytest.FixtureRequest) -> Iterator[Setup]:
    emulator = CASES[request.param][0]()
    with LoopbackServer(emulator) as server:
        yield Setup(request.param, server, emulator)


def request_with_image() -> ModelRequest:
    return ModelRequest("", conversations()["tool_image"], tools=TOOLS)


@ALL
async def test_complete_sends_media_natively_and_parses_the_reply(native: Setup) -> None:
    async with native.connect() as llm:
        reply = await llm.complete(request_with_image())
    assert reply.text == "Here is the chart summary."
    assert [(c.id, c.name) for c in reply.tool_calls] == [("call_a1", "get_file"),
                                                         ("call_b2", "get_file")]
    assert reply.tool_calls[1].arguments.replace(" ", "") == '{"path":"b.pdf"}'
    assert reply.usage.input_tokens == 40 and reply.usage.output_tokens == 9
    assert reply.finish_reason == "tool_calls"
    (received,) = native.emulator.received
    native.check_media(received.json())
    assert KEY not in repr(llm) and SECRET not in repr(llm)


@ALL
async def test_stream_accumulates_to_the_same_reply(native: Setup) -> None:
    async with native.connect() as llm:
        reply = await accumulate(llm.stream(request_with_image()))
    assert reply.text == "Here is the chart summary."
    assert [c.id for c in reply.tool_calls] == ["call_a1", "call_b2"]
    assert [c.arguments.replace(" ", "") for c in reply.tool_calls] == [
        '{"path":"a.png"}', '{"path":"b.pdf"}']
    assert reply.finish_reason == "tool_calls"
    assert reply.usage.output_tokens == 9
    native.check_media(native.emulator.received[0].json())


@ALL
async def test_429_with_retry_after_is_retried(native: Setup) -> None:
    native.emulator.script(rate_limited(retry_after="0"), rate_limited(retry_after="0"))
    async with native.connect() as llm:
        reply = await llm.complete(request_with_image())
    assert reply.text == "Here is the chart summary."
    assert len(native.emulator.received) == 3


@ALL
async def test_long_retry_after_surfaces_as_rate_limited(native: Setup) -> None:
    native.emulator.script(rate_limited(retry_after="120"))
    async with native.connect() as llm:
        with pytest.raises(RateLimited) as info:
            await llm.complete(request_with_image())
    assert info.value.retry_after == pytest.approx(120)
    assert len(native.emulator.received) == 1


@ALL
async def test_server_errors_are_retried_then_raised(native: Setup) -> None:
    native.emulator.script(server_error(500), server_error(503), server_error(500))
    async with native.connect(max_retries=2) as llm:
        with pytest.raises(ProviderError) as info:
            await llm.complete(request_with_image())
    assert info.value.status == 500 and len(native.emulator.received) == 3


@ALL
async def test_cut_stream_is_interrupted(native: Setup) -> None:
    native.emulator.script(lambda req: native.emulator.answer(  # type: ignore[attr-defined]
        req, ScriptedReply(REPLY.text, REPLY.tool_calls, cut_after=3)))
    async with native.connect() as llm:
        with pytest.raises(StreamInterrupted):
            await accumulate(llm.stream(request_with_image()))


@ALL
async def test_stalled_stream_is_interrupted(native: Setup) -> None:
    native.emulator.script(lambda req: native.emulator.answer(  # type: ignore[attr-defined]
        req, ScriptedReply(REPLY.text, REPLY.tool_calls, chunk_delay=0.6)))
    async with native.connect(timeout=Timeouts(read=0.15), max_retries=0) as llm:
        with pytest.raises(StreamInterrupted, match="stalled"):
            await accumulate(llm.stream(request_with_image()))


@ALL
async def test_slow_response_times_out(native: Setup) -> None:
    native.emulator.script(slow(Response.json({}), 1.0))
    async with native.connect(timeout=Timeouts(total=0.2), max_retries=0) as llm:
        with pytest.raises(ProviderTimeout):
            await llm.complete(request_with_image())


@ALL
async def test_bad_credentials_are_an_authentication_error(native: Setup) -> None:
    options = ({"aws_secret_access_key": "wrong-secret"} if native.name == "bedrock"
               else {"api_key": "sk-wrong"})
    async with native.connect(**options) as llm:
        with pytest.raises(AuthenticationError) as info:
            await llm.complete(request_with_image())
    assert info.value.status in (400, 401, 403)
    assert "wrong-secret" not in str(info.value) and "sk-wrong" not in str(info.value)


# --- provider specifics ---------------------------------------------------------------------


async def test_anthropic_headers_overload_and_context_errors() -> None:
    emulator = AnthropicEmulator(REPLY, api_key=KEY)
    file = ProviderFileSource("anthropic", "file_011", "image/png")
    with LoopbackServer(emulator) as server:
        native = Setup("anthropic", server, emulator)
        emulator.script(AnthropicEmulator.overloaded())
        async with native.connect() as llm:
            await llm.complete(request_with_image())
            await llm.complete(ModelRequest("", conversations(file)["file_ids_tool"]))
            emulator.script(AnthropicEmulator.prompt_too_long())
            with pytest.raises(ContextLengthExceeded):
                await llm.complete(request_with_image())
    overloaded, plain, with_file, _ = emulator.received
    assert plain.header("anthropic-version") == "2023-06-01"
    assert plain.header("x-api-key") == KEY
    assert plain.header("anthropic-beta") is None
    assert with_file.header("anthropic-beta") == "files-api-2025-04-14"
    assert overloaded.json() == plain.json()  # the retry resent the same body


async def test_responses_replays_reasoning_between_turns() -> None:
    emulator = OpenAIResponsesEmulator(REPLY, api_key=KEY)
    with LoopbackServer(emulator) as server:
        async with Setup("openai-responses", server, emulator).connect() as llm:
            first = await llm.complete(ModelRequest("", [Message.user("go")], tools=TOOLS))
            history = [Message.user("go"), first.as_message(),
                       *[Message("tool", [__import__("plait").ToolResult(
                           c.id, c.name, [Text("ok")])]) for c in first.tool_calls]]
            await llm.complete(ModelRequest("", history, tools=TOOLS))
    second = emulator.received[1].json()
    assert second["store"] is False and second["include"] == ["reasoning.encrypted_content"]
    kinds = [i.get("type", "message") for i in second["input"]]
    assert kinds == ["message", "reasoning", "message", "function_call", "function_call",
                     "function_call_output", "function_call_output"]
    assert second["input"][1]["encrypted_content"] == "gAAAA-emulated"


async def test_gemini_stream_route_and_signature_round_trip() -> None:
    emulator = GeminiEmulator(REPLY, api_key=KEY)
    with LoopbackServer(emulator) as server:
        async with Setup("gemini", server, emulator).connect() as llm:
            reply = await accumulate(llm.stream(ModelRequest("", [Message.user("go")],
                                                             tools=TOOLS)))
            history = [Message.user("go"), reply.as_message(),
                       Message("tool", [__import__("plait").ToolResult(
                           c.id, c.name, [Text("ok")]) for c in reply.tool_calls])]
            await llm.complete(ModelRequest("", history, tools=TOOLS))
    first, second = emulator.received
    assert first.path == "/v1beta/models/gemini-3-pro-preview:streamGenerateContent"
    assert first.query["alt"] == ["sse"] and first.header("x-goog-api-key") == KEY
    assert reply.tool_calls[0] == ToolCall("call_a1", "get_file", '{"path": "a.png"}',
                                           "ZW11bGF0ZWQtc2lnbmF0dXJl")
    model_turn = second.json()["contents"][1]["parts"]
    calls = [p for p in model_turn if "functionCall" in p]
    assert calls[0]["thoughtSignature"] == "ZW11bGF0ZWQtc2lnbmF0dXJl"
    assert "thoughtSignature" not in calls[1]
    answers = second.json()["contents"][2]["parts"]
    assert [a["functionResponse"]["id"] for a in answers] == ["call_a1", "call_b2"]


async def test_bedrock_signs_quotes_the_model_and_maps_throttling() -> None:
    emulator = BedrockEmulator(REPLY, sigv4=(AKID, SECRET))
    with LoopbackServer(emulator) as server:
        native = Setup("bedrock", server, emulator)
        async with native.connect(max_retries=0) as llm:
            await llm.complete(request_with_image())
            emulator.script(BedrockEmulator.throttled())
            with pytest.raises(RateLimited):
                await llm.complete(request_with_image())
            emulator.script(BedrockEmulator.input_too_long())
            with pytest.raises(ContextLengthExceeded):
                await llm.complete(request_with_image())
    first = emulator.received[0]
    assert first.path == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
    assert emulator.models[0] == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert "/eu-west-1/bedrock/aws4_request" in (first.header("authorization") or "")
    assert SECRET not in str(first.headers)


def test_bedrock_without_credentials_is_an_authentication_error(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance-metadata probe
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    with pytest.raises(AuthenticationError, match="no AWS credentials"):
        connect("bedrock:amazon.nova-pro-v1:0", base_url="http://127.0.0.1:9")


async def test_bedrock_api_key_mode() -> None:
    emulator = BedrockEmulator(REPLY, api_key=KEY)
    with LoopbackServer(emulator) as server:
        llm = connect("bedrock:amazon.nova-pro-v1:0", api_key=KEY, base_url=server.url)
        async with llm:
            reply = await accumulate(llm.stream(request_with_image()))
    assert reply.text == REPLY.text
    received = emulator.received[0]
    assert received.header("authorization") == f"Bearer {KEY}"
    assert received.path.endswith("/converse-stream")
    content = received.json()["messages"][2]["content"][0]["toolResult"]["content"]
    assert "image" in content[0]  # Nova takes images inside the tool result too


OVERSIZED = {
    # bytes of one inline image over the provider's limit, and what the error names
    "anthropic": (5 * 1024 * 1024, "huge.png"),            # 5 MB of base64 per image
    "openai-responses": (51 * 1024 * 1024, "huge.png"),    # 50 MB per image
    "gemini": (21 * 1024 * 1024, "request limit"),         # 20 MB inline per request
    "bedrock": (3_800_000, "huge.png"),                    # 3.75 MB per image
}


@ALL
async def test_preflight_rejects_before_any_http(native: Setup) -> None:
    from plait import ContentRejected, Image, ToolResult

    size, named = OVERSIZED[native.name]
    call = ToolCall("call_big", "get_file", "{}")
    messages = [Message.user("x"), Message.assistant(call),
                Message("tool", [ToolResult(call.id, call.name, [
                    Image.from_bytes(bytes(size), "image/png", name="huge.png")])])]
    async with native.connect() as llm:
        with pytest.raises(ContentRejected) as info:
            await llm.complete(ModelRequest("", messages, tools=TOOLS))
    assert native.emulator.received == []
    assert info.value.provider is not None and info.value.limit
    assert named in str(info.value)
