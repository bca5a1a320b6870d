"""The transport and the provider client over real HTTP on loopback: retries with Retry-After,
typed errors, timeouts, cut streams, secrets kept out of errors, logs and reprs."""

from __future__ import annotations

import email.utils
import hashlib
import json
import time
from collections.abc import Iterator

import pytest
from structlog.testing import capture_logs

from plait import (
    AuthenticationError,
    ContextLengthExceeded,
    Image,
    Message,
    ModelRequest,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    StreamInterrupted,
    Text,
    TextDelta,
    ToolCall,
    ToolResult,
)
from plait.providers import (
    EncodeCache,
    RetryPolicy,
    Timeouts,
    Transport,
    accumulate,
    connect,
)
from plait.providers._transport import parse_retry_after
from plait.testing import (
    Emulator,
    OpenAIChatEmulator,
    Response,
    ScriptedReply,
    rate_limited,
    server_error,
    slow,
)

KEY = "sk-test-SECRET-0123456789"
HELLO = ModelRequest(model="", messages=[Message.user("hi")])


@pytest.fixture
def chat() -> Iterator[tuple[OpenAIChatEmulator, str]]:
    emulator = OpenAIChatEmulator(ScriptedReply("Hello, world."),
                                  auth=("authorization", f"Bearer {KEY}"))
    with emulator.serve() as server:
        yield emulator, server.url


async def test_complete_and_stream_round_trip(chat: tuple[OpenAIChatEmulator, str]) -> None:
    emulator, url = chat
    async with connect("openai:gpt-4.1", api_key=KEY, base_url=url) as llm:
        reply = await llm.complete(HELLO)
        deltas = [d async for d in llm.stream(HELLO)]
    assert reply.text == "Hello, world." and reply.usage.input_tokens == 11
    assert reply.response_id == "chatcmpl-emulated"
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "Hello, world."
    assert len([d for d in deltas if isinstance(d, TextDelta)]) > 1  # really incremental
    plain, streamed = (r.json() for r in emulator.received)
    assert plain["model"] == "gpt-4.1" and "stream" not in plain
    assert streamed["stream"] is True and streamed["stream_options"] == {"include_usage": True}
    assert emulator.received[0].path == "/chat/completions"


async def test_429_with_retry_after_then_success(chat: tuple[OpenAIChatEmulator, str]) -> None:
    emulator, url = chat
    emulator.script(rate_limited(retry_after="0.3"))
    with capture_logs() as logs:
        async with connect("openai:gpt-4.1", api_key=KEY, base_url=url) as llm:
            started = time.monotonic()
            reply = await llm.complete(HELLO)
            waited = time.monotonic() - started
    assert reply.text == "Hello, world."
    assert len(emulator.received) == 2
    assert waited >= 0.3  # the server's Retry-After was honoured
    (retry,) = [e for e in logs if e["event"] == "provider_retry"]
    assert retry["status"] == 429 and retry["delay"] == 0.3


async def test_retry_after_as_http_date(chat: tuple[OpenAIChatEmulator, str]) -> None:
    emulator, url = chat
    # HTTP dates have whole-second resolution: 2 s ahead is at least 1 s of real waiting.
    when = email.utils.formatdate(time.time() + 2, usegmt=True)
    emulator.script(rate_limited(retry_after=when))
    with capture_logs() as logs:
        async with connect("openai:gpt-4.1", api_key=KEY, base_url=url) as llm:
            started = time.monotonic()
            await llm.complete(HELLO)
    assert time.monotonic() - started >= 0.5
    (retry,) = [e for e in logs if e["event"] == "provider_retry"]
    assert 0.5 <= retry["delay"] <= 2.0
    assert len(emulator.received) == 2


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "2.5"}) == 2.5
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= (parse_retry_after({"retry-after": future}) or 0) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


async def test_500_retried_then_exhausted_with_request_id(
        chat: tuple[OpenAIChatEmulator, str]) -> None:
    emulator, url = chat
    emulator.script(server_error(503), server_error(500), server_error(502))
    async with connect("openai:gpt-4.1", api_key=KEY, base_url=url, max_retries=2,
                       ) as llm:
        llm.transport.retry = RetryPolicy(max_retries=2, base_delay=0.01)
        with pytest.raises(ProviderError) as caught:
            await llm.complete(HELLO)
    assert caught.value.status == 502 and caught.value.request_id == "req_emulated_502"
    assert caught.value.provider == "openai"
    assert len(emulator.received) == 3
    emulator.script(server_error(500))
    async with connect("openai:gpt-4.1", api_key=KEY, base_url=url) as llm:
        llm.transport.retry = RetryPolicy(base_delay=0.01)
        assert (await llm.complete(HELLO)).text == "Hello, world."


async def test_rate_limit_longer_than_we_wait_is_raised(
        chat: tuple[OpenAIChatEmulator, str]) -> None:
    emulator, url = chat
    emulator.script(rate_limited(retry_after="3600"))
    async with connect("openai:gpt-4.1", api_key=KEY, base_url=url) as llm:
        with pytest.raises(RateLimited) as caught:
            await llm.complete(HELLO)
    assert caught.value.retry_after == 3600 and len(emulator.received) == 1


async def test_auth_error_never_shows_the_key(chat: tuple[OpenAIChatEmulator, str]) -> None:
    emulator, url = chat
    emulator.script(Response.json({"error": {"message": f"Incorrect API key provided: {KEY}"}},
                                  401))
    with capture_logs() as logs:
        async with connect("openai:gpt-4.1", api_key=KEY, base_url=url) as llm:
            assert KEY not in repr(llm) and KEY not in repr(llm.transport)
            with pytest.raises(AuthenticationError) as caught:
                await llm.complete(HELLO)
    assert KEY not in str(caught.value) and "***" in str(caught.value)
    assert KEY not in json.dumps(logs, default=str)
    assert len(emulator.received) == 1  # 401 is not retried


async def test_context_length_maps_to_its_own_error(
        chat: tuple[OpenAIChatEmulator, str]) -> None:
    emulator, url = chat
    emulator.script(Response.json({"error": {
        "message": "This model's maximum context length is 128000 tokens.",
        "code": "context_length_exceeded"}}, 400))
    async with connect("openai:gpt-4.1", api_key=KEY, base_url=url) as llm:
        with pytest.raises(ContextLengthExceeded, match="maximum context length"):
            await llm.complete(HELLO)


async def test_cut_stream_raises_stream_interrupted(
        chat: tuple[OpenAIChatEmulator, str]) -> None:
    emulator, url = chat
    emulator.script_reply(ScriptedReply("a long answer that is cut", cut_after=4))
    async with connect("openai:gpt-4.1", api_key=KEY, base_url=url) as llm:
        seen: list[str] = []
        with pytest.raises(StreamInterrupted):
            async for delta in llm.stream(HELLO):
                if isinstance(delta, TextDelta):
                    seen.append(delta.text)
    assert seen and "".join(seen) != "a long answer that is cut"


async def test_slow_response_times_out(chat: tuple[OpenAIChatEmulator, str]) -> None:
    emulator, url = chat
    emulator.script(slow(Response.json({"late": True}), 1.5))
    async with connect("openai:gpt-4.1", api_key=KEY, base_url=url, timeout=0.3,
                       max_retries=0) as llm:
        started = time.monotonic()
        with pytest.raises(ProviderTimeout):
            await llm.complete(HELLO)
    assert time.monotonic() - started < 1.4


async def test_read_timeout_is_retried_then_reported() -> None:
    emulator = Emulator(slow(Response.json({}), 0.6))
    with emulator.serve() as server:
        transport = Transport("x", server.url, timeouts=Timeouts(read=0.1),
                              retry=RetryPolicy(max_retries=1, base_delay=0.01))
        with pytest.raises(ProviderTimeout, match="2 attempt"):
            await transport.request_json("POST", "/v1", b"{}")
        await transport.aclose()
    assert len(emulator.received) == 2


async def test_connection_refused_is_a_provider_error() -> None:
    transport = Transport("x", "http://127.0.0.1:9", retry=RetryPolicy(max_retries=1,
                                                                        base_delay=0.01))
    with pytest.raises(ProviderError, match="connection failed after 2 attempt"):
        await transport.request_json("GET", "/")
    await transport.aclose()


def test_missing_key_is_an_authentication_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
        connect("openai:gpt-4.1")
    with pytest.raises(ValueError, match="provider:model"):
        connect("gpt-4.1")
    with pytest.raises(LookupError, match="unknown provider 'nope'"):
        connect("nope:x")


async def test_key_from_environment(monkeypatch: pytest.MonkeyPatch,
                                    chat: tuple[OpenAIChatEmulator, str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    async with connect("openai:gpt-4.1", base_url=chat[1]) as llm:
        assert (await llm.complete(HELLO)).text == "Hello, world."


async def test_streamed_request_body_arrives_whole_with_content_length() -> None:
    """Above the threshold the body is streamed (never joined in memory) with an exact
    Content-Length; the server receives exactly the JSON that was meant."""
    emulator = OpenAIChatEmulator(ScriptedReply("ok"))
    big = bytes(range(256)) * 8192  # 2 MiB
    call = ToolCall("call_1", "shot")
    messages = [Message.user("a", Image.from_bytes(big, "image/png")),
                Message.assistant(call),
                Message("tool", [ToolResult("call_1", "shot",
                                            [Text("t"), Image.from_bytes(big, "image/jpeg")])])]
    with emulator.serve() as server:
        async with connect("openai:gpt-4.1", api_key=KEY, base_url=server.url,
                           stream_threshold=1 << 20) as llm:
            _, body = await llm.prepare(ModelRequest(model="", messages=messages),
                                        stream=False)
            assert not isinstance(body, bytes)
            await llm.complete(ModelRequest(model="", messages=messages))
    received = emulator.received[0]
    assert int(received.header("content-length") or 0) == len(received.body)
    assert received.header("transfer-encoding") is None
    sent = received.json()
    import base64

    urls = [sent["messages"][0]["content"][1]["image_url"]["url"],
            sent["messages"][3]["content"][1]["image_url"]["url"]]
    assert [base64.b64decode(u.split(",", 1)[1]) == big for u in urls] == [True, True]
    assert hashlib.sha256(received.body).hexdigest() == hashlib.sha256(
        await body.read()).hexdigest()


async def test_media_is_encoded_once_per_conversation(
        chat: tuple[OpenAIChatEmulator, str]) -> None:
    cache = EncodeCache()
    image = Image.from_bytes(b"\x89PNG" * 1000, "image/png")
    history = [Message.user("look", image)]
    async with connect("openai:gpt-4.1", api_key=KEY, base_url=chat[1],
                       encode_cache=cache) as llm:
        for turn in range(3):
            reply = await llm.complete(ModelRequest(model="", messages=history))
            history = [*history, reply.as_message(), Message.user(f"again {turn}")]
    assert (cache.misses, cache.hits) == (1, 2)
    bodies = [r.json()["messages"][0]["content"][1] for r in chat[0].received]
    assert bodies[0] == bodies[1] == bodies[2]


async def test_accumulate_over_a_live_stream(chat: tuple[OpenAIChatEmulator, str]) -> None:
    emulator, url = chat
    emulator.script_reply(ScriptedReply("", [("call_9", "lookup", '{"q": "plait"}')],
                                        reasoning="think first"))
    async with connect("openai:gpt-4.1", api_key=KEY, base_url=url) as llm:
        reply = await accumulate(llm.stream(HELLO))
    assert reply.tool_calls == [ToolCall("call_9", "lookup", '{"q": "plait"}')]
    assert reply.parts[0].text == "think first"  # type: ignore[union-attr]
    assert reply.finish_reason == "tool_calls" and reply.usage.output_tokens == 7


async def test_stalled_stream_is_interrupted(chat: tuple[OpenAIChatEmulator, str]) -> None:
    emulator, url = chat
    emulator.script_reply(ScriptedReply("slow words arriving", chunk_delay=0.6))
    async with connect("openai:gpt-4.1", api_key=KEY, base_url=url,
                       timeout=Timeouts(read=0.15)) as llm:
        with pytest.raises(StreamInterrupted, match="stalled"):
            async for _ in llm.stream(HELLO):
                pass


async def test_borrowed_http_client_is_used_and_left_open(
        chat: tuple[OpenAIChatEmulator, str]) -> None:
    import httpx

    seen: list[str] = []

    async def hook(request: httpx.Request) -> None:
        seen.append(request.url.path)

    async with httpx.AsyncClient(event_hooks={"request": [hook]}) as client:
        async with connect("openai:gpt-4.1", api_key=KEY, base_url=chat[1],
                           http_client=client) as llm:
            await llm.complete(HELLO)
        assert not client.is_closed
        assert seen == ["/chat/completions"]
