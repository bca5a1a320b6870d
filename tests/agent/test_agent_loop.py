"""The agent loop's behaviour: tool errors and timeouts fed back, 429 then success, a human
approval step (examples/agent_approval.py), cancellation mid-upload, provider switching."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from plait import (
    Agent,
    ContentHandle,
    ContentStore,
    InputRequired,
    MediaRouted,
    StepFailed,
    ToolCallFinished,
    TransferProgressed,
    Video,
    tool,
)
from plait.providers import RetryPolicy, connect
from plait.stores import GeminiFilesStore, MemoryStore
from plait.testing import (
    AnthropicEmulator,
    GeminiEmulator,
    GeminiFilesEmulator,
    LoopbackServer,
    ScriptedReply,
    rate_limited,
)

from .test_agent_e2e import FRAME, KEY, key_frame

ROOT = Path(__file__).resolve().parents[2]


def connector(url: str, **options: Any) -> Callable[[str], Any]:
    def make(model: str) -> Any:
        provider = connect(model, api_key=KEY, base_url=url, **options)
        provider.transport.retry = RetryPolicy(max_retries=2, base_delay=0.01)
        return provider
    return make


@tool(timeout=0.05)
async def slow_lookup(query: str) -> str:
    """Look something up (slowly)."""
    await anyio.sleep(5)
    return query


@tool
def broken(x: int) -> str:
    """Always fails."""
    raise RuntimeError("disk on fire")


def tool_texts(body: Any) -> dict[str, str]:
    """Each tool_result's text (its first text block, or the string content)."""
    out: dict[str, str] = {}
    for block in body["messages"][-1]["content"]:
        if block["type"] != "tool_result":
            continue
        content = block["content"]
        if isinstance(content, str):
            out[block["tool_use_id"]] = content
        else:
            out[block["tool_use_id"]] = "".join(c.get("text", "") for c in content)
    return out


async def test_tool_errors_timeouts_and_bad_calls_go_back_to_the_model() -> None:
    emulator = AnthropicEmulator(api_key=KEY)
    emulator.script_reply(ScriptedReply("", [
        ("t1", "slow_lookup", '{"query": "x"}'), ("t2", "broken", '{"x": 1}'),
        ("t3", "broken", '{"x": "not a number"}'), ("t4", "nonexistent", "{}"),
        ("t5", "key_frame", '{"second": 1}')]))
    emulator.script_reply(ScriptedReply("Some tools failed."))
    with LoopbackServer(emulator) as server:
        agent = Agent("anthropic:claude-sonnet-4-5", tools=[slow_lookup, broken, key_frame],
                      store=MemoryStore(), connect=connector(server.url))
        finished: list[ToolCallFinished] = []
        with anyio.fail_after(4):
            async with agent.start("go") as run:
                async for ev in run.events():
                    if isinstance(ev, ToolCallFinished):
                        finished.append(ev)
                result = await run.result()
        await agent.aclose()
    assert result.output == "Some tools failed."
    texts = tool_texts(emulator.received[-1].json())
    assert list(texts) == ["t1", "t2", "t3", "t4", "t5"]  # every call answered, in order
    assert "timed out" in texts["t1"]
    assert "disk on fire" in texts["t2"]
    assert "x" in texts["t3"] and texts["t3"] != texts["t2"]
    assert "nonexistent" in texts["t4"] and "key_frame" in texts["t4"]
    blocks = emulator.received[-1].json()["messages"][-1]["content"]
    assert [b.get("is_error", False) for b in blocks] == [True, True, True, True, False]
    errors = {ev.result.call_id: ev.error for ev in finished}
    assert errors["t1"] and "ToolTimeout" in errors["t1"] and errors["t5"] is None


async def test_429_then_success() -> None:
    emulator = AnthropicEmulator(api_key=KEY)
    emulator.script(rate_limited(retry_after="0"))
    emulator.script_reply(ScriptedReply("after the retry"))
    with LoopbackServer(emulator) as server:
        agent = Agent("anthropic:claude-sonnet-4-5", connect=connector(server.url))
        result = await agent.run("hi")
        await agent.aclose()
    assert result.output == "after the retry"
    assert len(emulator.received) == 2


async def test_persistent_429_fails_the_run_with_a_typed_cause() -> None:
    from plait import RateLimited

    emulator = AnthropicEmulator(api_key=KEY)
    emulator.script(*[rate_limited(retry_after="0") for _ in range(5)])
    with LoopbackServer(emulator) as server:
        agent = Agent("anthropic:claude-sonnet-4-5", connect=connector(server.url))
        with pytest.raises(StepFailed) as info:
            await agent.run("hi")
        await agent.aclose()
    assert isinstance(info.value.__cause__, RateLimited)
    assert KEY not in str(info.value) and KEY not in str(info.value.__cause__)


def _load_example() -> Any:
    spec = importlib.util.spec_from_file_location("approval_example",
                                                  ROOT / "examples" / "agent_approval.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["approval_example"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("allow", [True, False])
async def test_approval_example(allow: bool) -> None:
    example = _load_example()
    emulator = AnthropicEmulator(api_key=KEY)
    emulator.script_reply(ScriptedReply("", [("c1", "delete_file", '{"path": "/a"}'),
                                             ("c2", "delete_file", '{"path": "/b"}')]))
    emulator.script_reply(ScriptedReply("done"))
    with LoopbackServer(emulator) as server:
        agent = Agent("anthropic:claude-sonnet-4-5", tools=[example.delete_file],
                      workflow=example.ApprovingWorkflow, connect=connector(server.url))
        prompts: list[Any] = []
        async with agent.start("clean up") as run:
            async for ev in run.events():
                if isinstance(ev, InputRequired):
                    prompts.append(ev.prompt)
                    await run.send(example.Approval(allowed=["c2"] if allow else []))
            result = await run.result()
        await agent.aclose()
    assert [p["id"] for p in prompts[0]] == ["c1", "c2"]
    texts = tool_texts(emulator.received[-1].json())
    assert texts["c1"] == "The user did not allow this call."
    if allow:
        assert texts["c2"] == "deleted /b"
    else:
        assert texts["c2"] == "The user did not allow this call."
    assert result.output == "done"


class SlowStore(MemoryStore):
    """A memory store whose streams trickle: long enough to cancel an upload midway."""

    async def fetch_stream(self, handle: ContentHandle) -> AsyncIterator[bytes]:
        async with contextlib.aclosing(super().fetch_stream(handle)) as chunks:
            async for chunk in chunks:
                for start in range(0, len(chunk), 256 * 1024):
                    await anyio.sleep(0.05)
                    yield chunk[start:start + 256 * 1024]


async def test_cancelling_mid_upload_records_nothing() -> None:
    store = SlowStore()
    video = await store.put(os.urandom(3 * 1024 * 1024), mime_type="video/mp4",
                            display_name="talk.mp4")
    chat = GeminiEmulator(api_key=KEY)
    with GeminiFilesEmulator(api_key=KEY) as files, LoopbackServer(chat) as server:
        gemini_files = GeminiFilesStore(api_key=KEY, base_url=files.url, chunk_size=256 * 1024)
        probe = connect("gemini:gemini-3-pro-preview", api_key=KEY)
        caps = probe.capabilities
        await probe.aclose()
        small = caps.with_(max_item_bytes={k: 1024 for k in caps.max_item_bytes} | {
            kind: 1024 for kind in caps.user_kinds})
        agent = Agent("gemini:gemini-3-pro-preview", store=store,
                      file_stores={"gemini": gemini_files},
                      connect=connector(server.url, capabilities=small))
        seen = 0
        async with agent.start(["Summarise", Video.from_handle(video)]) as run:
            async for ev in run.events():
                if isinstance(ev, TransferProgressed) and ev.progress.done > 0:
                    seen = ev.progress.done
                    break  # leaving the block cancels the run mid-upload
        await agent.aclose()
        await gemini_files.aclose()
        assert 0 < seen < 3 * 1024 * 1024
        assert not gemini_files.holds(video)
        assert files.files == {}
        assert chat.received == []  # the model was never called
    assert agent.workflow.rehoster._cache == {}


async def test_switching_provider_keeps_handles_valid() -> None:
    gemini = GeminiEmulator(api_key=KEY)
    gemini.script_reply(ScriptedReply("", [("g1", "key_frame", '{"second": 2}')]))
    gemini.script_reply(ScriptedReply("Frame 2 is red."))
    anthropic = AnthropicEmulator(api_key=KEY)
    anthropic.script_reply(ScriptedReply("Yes, red."))
    with LoopbackServer(gemini) as g_server, LoopbackServer(anthropic) as a_server:
        urls = {"gemini": g_server.url, "anthropic": a_server.url}

        def make(model: str) -> Any:
            return connector(urls[model.split(":")[0]])(model)

        agent = Agent("gemini:gemini-3-pro-preview", tools=[key_frame], store=MemoryStore(),
                      connect=make)
        first = await agent.run("Look at second 2")
        agent.model = "anthropic:claude-sonnet-4-5"
        routes: list[Any] = []
        async with agent.start("Is it red?", history=first.messages) as run:
            async for ev in run.events():
                if isinstance(ev, MediaRouted):
                    routes.append(ev.move)
            second = await run.result()
        await agent.aclose()
    assert second.output == "Yes, red." and second.model == "anthropic:claude-sonnet-4-5"
    body = anthropic.received[-1].json()
    frame_block = body["messages"][2]["content"][0]["content"][0]
    assert frame_block["type"] == "image"
    import base64
    assert base64.b64decode(frame_block["source"]["data"]) == FRAME
    handle_id = first.messages[2].parts[0].output[0].handle.id  # type: ignore[union-attr]
    assert [m.handle_id for m in routes] == [handle_id]
    assert handle_id in body["system"] if isinstance(body["system"], str) else str(body["system"])


async def test_content_store_is_reused_for_prompt_media() -> None:
    emulator = AnthropicEmulator(api_key=KEY)
    emulator.script_reply(ScriptedReply("ok"))
    store = MemoryStore()
    with LoopbackServer(emulator) as server:
        from plait import Image
        agent = Agent("anthropic:claude-sonnet-4-5", store=store, connect=connector(server.url))
        result = await agent.run(["What is this?", Image.from_bytes(FRAME, "image/png")])
        await agent.aclose()
    part = result.messages[0].parts[1]
    assert isinstance(part.handle, ContentHandle)  # type: ignore[union-attr]
    assert await store.fetch_bytes(part.handle) == FRAME  # type: ignore[union-attr]
    assert isinstance(store, ContentStore)


async def test_request_too_big_overall_uploads_its_largest_item() -> None:
    from plait import Image
    from plait.stores import AnthropicFilesStore
    from plait.testing import AnthropicFilesEmulator

    emulator = AnthropicEmulator(api_key=KEY)
    emulator.script_reply(ScriptedReply("two images"))
    probe = connect("anthropic:claude-sonnet-4-5", api_key=KEY)
    tight = probe.capabilities.with_(max_request_bytes=120_000)
    await probe.aclose()
    big, small = os.urandom(90_000), os.urandom(20_000)
    with AnthropicFilesEmulator(api_key=KEY) as files, LoopbackServer(emulator) as server:
        file_store = AnthropicFilesStore(api_key=KEY, base_url=files.url)
        agent = Agent("anthropic:claude-sonnet-4-5", store=MemoryStore(),
                      file_stores={"anthropic": file_store},
                      connect=connector(server.url, capabilities=tight))
        result = await agent.run(["compare", Image.from_bytes(big, "image/png"),
                                  Image.from_bytes(small, "image/png")])
        await agent.aclose()
        await file_store.aclose()
        assert result.output == "two images"
        blocks = emulator.received[-1].json()["messages"][0]["content"]
        sources = [b["source"] for b in blocks if b["type"] == "image"]
        assert sources[0]["type"] == "file" and sources[1]["type"] == "base64"
        assert files.blob_bytes(sources[0]["file_id"]) == big
        assert emulator.received[-1].header("anthropic-beta") == "files-api-2025-04-14"


async def test_max_turns_stops_the_loop_with_the_last_text() -> None:
    from plait import ModelReply, Text, ToolCall, Usage
    from plait.testing import ScriptedModel

    def always_a_tool(request: Any) -> ModelReply:
        n = len(request.messages)
        return ModelReply([Text(f"step {n}"), ToolCall(f"c{n}", "key_frame", '{"second": 1}')],
                          Usage(3, 2), "tool_calls")

    model = ScriptedModel(always_a_tool)
    agent = Agent("scripted:x", tools=[key_frame], store=MemoryStore(), max_turns=3,
                  connect=lambda _: model)
    result = await agent.run("loop forever")
    assert result.finish_reason == "max_turns" and result.turns == 3
    assert len(model.requests) == 3 and result.output == "step 5"
    assert result.usage.input_tokens == 9
    assert [m.role for m in result.messages].count("tool") == 3


async def test_a_subclass_switches_provider_between_turns_of_one_run() -> None:
    from plait import (
        AgentInput,
        AgentWorkflow,
        Context,
        ModelReply,
        Prepared,
        StopEvent,
        Text,
        ToolCall,
        ToolsDispatched,
        Usage,
        step,
    )
    from plait.testing import ScriptedModel

    class Escalating(AgentWorkflow):
        """After the first turn, the rest of the run goes to the bigger model."""

        @step
        async def prepare(self, ev: AgentInput | ToolsDispatched,
                          ctx: Context[Any]) -> Prepared | StopEvent:
            if isinstance(ev, ToolsDispatched):
                ctx.state.model = "big:model"
            return await super().prepare(ev, ctx)

    small = ScriptedModel([ModelReply([ToolCall("c1", "key_frame", '{"second": 4}')],
                                      Usage(5, 5))], name="small")
    big = ScriptedModel(["It is red."], name="big")
    models = {"small:model": small, "big:model": big}
    agent = Agent("small:model", tools=[key_frame], store=MemoryStore(), workflow=Escalating,
                  connect=models.__getitem__)
    result = await agent.run("What is at second 4?")
    assert result.output == "It is red." and result.model == "big:model"
    assert len(small.requests) == 1 and len(big.requests) == 1
    frame = big.requests[0].messages[-1].parts[0].output[0]  # type: ignore[union-attr]
    assert frame.source is not None and frame.source.data == FRAME  # type: ignore[union-attr]
    assert isinstance(result.messages[-1].parts[0], Text)
