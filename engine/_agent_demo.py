"""``plait demo``: one workflow, three providers, one video.

1. **Gemini** watches the video. It is too big to resend inline every turn, so the rehost step
   uploads it through the Gemini Files API (resumable upload, then waits for ``ACTIVE``).
2. **Claude** calls the ``key_frames`` tool with the video's handle; the tool returns images,
   which become handles and travel inside Anthropic's ``tool_result``.
3. **GPT** (OpenAI Responses) gets Claude's conversation and writes the answer: the same frame
   handles, now rehosted for OpenAI.

Each stage is an ``Agent`` run as a child workflow of ``VideoPipeline``, so its events (streamed
text, tool calls, where each media part went on each wire, upload progress) reach the caller.
Without API keys everything runs against in-process emulators with scripted replies; with
``GEMINI_API_KEY``, ``ANTHROPIC_API_KEY`` and ``OPENAI_API_KEY`` set (and ``--video PATH``) it
calls the real APIs. The tool draws placeholder frames: plait has no video decoder.
"""

from __future__ import annotations

import contextlib
import os
import re
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from ._agent import Agent
from ._agent_events import (
    AgentInput,
    AgentResult,
    AgentTextDelta,
    MediaRouted,
    ToolCallFinished,
    ToolCallStarted,
    TransferProgressed,
    TurnFinished,
    TurnStarted,
)
from ._content import ContentHandle, ContentKind
from ._context import Context
from ._events import Event, StartEvent, StopEvent
from ._hooks import RunHooks
from ._inputs import VideoInput
from ._messages import Usage
from ._parts import ContentPart, Image, MediaPart, Video
from ._rehost import MediaMove
from ._step import step
from ._tools import tool
from ._workflow import Workflow

__all__ = ["VideoPipeline", "run_pipeline"]

MODELS = {
    "watch": "gemini:gemini-2.5-flash",
    "look": "anthropic:claude-sonnet-4-5",
    "write": "openai-responses:gpt-5-mini",
}
KEYS = ("GEMINI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")
MB = 1024 * 1024


# --- media --------------------------------------------------------------------------------------


def png_frame(second: int, width: int = 96, height: int = 54) -> bytes:
    """A placeholder key frame: a colour per second with a bar showing the position."""
    hue = (second * 47) % 256
    colour = bytes((hue, 255 - hue, (hue * 3) % 256))
    bar = min(width, second * width // 12 + 1)
    row = b"\x00" + b"\xff\xff\xff" * bar + colour * (width - bar)
    plain = b"\x00" + colour * width
    raw = b"".join(row if y > height - 6 else plain for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def synthetic_video(size: int = 3 * MB) -> bytes:
    """Bytes that look like an MP4 to a MIME sniffer (the emulators do not decode video)."""
    head = struct.pack(">I", 24) + b"ftypisom" + b"\x00\x00\x02\x00isomiso2"
    filler = bytes(range(256)) * (size // 256 + 1)
    return (head + struct.pack(">I", size - 24) + b"mdat" + filler)[:size]


@tool
async def key_frames(video: VideoInput, seconds: list[int]) -> list[Image]:
    """Extract key frames from a video.

    :param video: the video's content id.
    :param seconds: the timestamps (in seconds) to take frames at.
    """
    name = (video.display_name or "video").rsplit(".", 1)[0]
    return [Image.from_bytes(png_frame(s), "image/png", name=f"{name}-{s:02d}s.png")
            for s in seconds[:6]]


# --- the pipeline -------------------------------------------------------------------------------


class VideoTask(StartEvent):
    """The pipeline's input: a stored video and the question about it."""

    video: ContentHandle
    question: str


class Watched(Event):
    """Gemini's notes on the video."""

    task: VideoTask
    notes: AgentResult


class Looked(Event):
    """Claude's look at the key frames (its whole conversation, frames included)."""

    task: VideoTask
    notes: AgentResult


class VideoPipeline(Workflow[VideoTask, AgentResult]):
    """watch (Gemini) → look (Claude, with a tool returning images) → write (GPT)."""

    def __init__(self, agents: dict[str, Agent], **options: Any) -> None:
        super().__init__(**options)
        self.agents = agents

    async def _ask(self, stage: str, ctx: Context[Any], agent_input: AgentInput) -> AgentResult:
        result: AgentResult = await ctx.run_workflow(self.agents[stage].workflow, agent_input)
        return result

    @step
    async def watch(self, ev: VideoTask, ctx: Context[Any]) -> Watched:
        """Gemini watches the video and names the key moments."""
        prompt: list[str | ContentPart] = [f"{ev.question} List the key moments as seconds.",
                                           Video.from_handle(ev.video)]
        return Watched(task=ev, notes=await self._ask("watch", ctx, AgentInput(prompt=prompt)))

    @step
    async def look(self, ev: Watched, ctx: Context[Any]) -> Looked:
        """Claude pulls the key frames with a tool and describes them."""
        prompt: list[str | ContentPart] = [
            f"Notes on video {ev.task.video.id}: {ev.notes.output}\n"
            "Get the frames at those moments with key_frames and describe them."]
        return Looked(task=ev.task, notes=await self._ask("look", ctx, AgentInput(prompt=prompt)))

    @step
    async def write(self, ev: Looked, ctx: Context[Any]) -> StopEvent:
        """GPT reads Claude's conversation (frames included) and answers the question."""
        prompt: list[str | ContentPart] = [
            f"Answer the original question in two sentences: {ev.task.question}"]
        answer = await self._ask("write", ctx, AgentInput(prompt=prompt,
                                                          history=ev.notes.messages))
        return StopEvent(result=answer)


# --- emulated providers -------------------------------------------------------------------------


@contextlib.contextmanager
def emulated() -> Iterator[dict[str, Agent]]:
    """Agents wired to in-process emulators with scripted replies (no key, no network)."""
    from plait.providers import RetryPolicy, connect
    from plait.stores import GeminiFilesStore, MemoryStore
    from plait.testing import (
        AnthropicEmulator,
        GeminiEmulator,
        GeminiFilesEmulator,
        LoopbackServer,
        OpenAIResponsesEmulator,
        ScriptedReply,
    )

    key = "demo-key"
    gemini = GeminiEmulator(ScriptedReply(
        "The speaker introduces the chart at 2 s, points at the spike at 5 s and shows the "
        "summary slide at 9 s.", input_tokens=1290, output_tokens=31), api_key=key)
    anthropic = AnthropicEmulator(api_key=key)

    def call_tool(request: Any) -> Any:
        found = re.search(r"video (h_[a-z0-9]+)", request.body.decode())
        handle = found.group(1) if found else "h_missing"
        return anthropic.answer(request, ScriptedReply(
            "Let me look at those moments.",
            [("toolu_demo1", "key_frames", f'{{"video": "{handle}", "seconds": [2, 5, 9]}}')],
            input_tokens=610, output_tokens=48))

    anthropic.script(call_tool)
    anthropic.script_reply(ScriptedReply(
        "Frame 2 s: a bar chart appears. Frame 5 s: the tallest bar, highlighted. Frame 9 s: "
        "a summary slide.", input_tokens=1820, output_tokens=37))
    openai = OpenAIResponsesEmulator(ScriptedReply(
        "The video walks through a sales chart: it introduces it, highlights the spike at "
        "5 s, and ends on a summary slide. The key takeaway is that spike.",
        input_tokens=2100, output_tokens=44), api_key=key)
    with (GeminiFilesEmulator(api_key=key, processing_polls=2) as files,
          LoopbackServer(gemini) as g, LoopbackServer(anthropic) as a,
          LoopbackServer(openai) as o):
        urls = {"gemini": g.url, "anthropic": a.url, "openai-responses": o.url + "/v1"}

        def make(model: str) -> Any:
            provider = connect(model, api_key=key, base_url=urls[model.split(":")[0]])
            provider.transport.retry = RetryPolicy(max_retries=2, base_delay=0.01)
            return provider

        store = MemoryStore()
        gemini_files = GeminiFilesStore(api_key=key, base_url=files.url, poll_interval=0.05)
        yield _agents(store, {"gemini": gemini_files}, make)


def _agents(store: Any, file_stores: dict[str, Any],
            connect: Callable[[str], Any] | None) -> dict[str, Agent]:
    common: dict[str, Any] = {"store": store, "file_stores": file_stores, "connect": connect,
                              "upload_over": 1 * MB}
    return {
        "watch": Agent(MODELS["watch"], system="You watch videos closely.", **common),
        "look": Agent(MODELS["look"], tools=[key_frames], **common),
        "write": Agent(MODELS["write"], system="You write crisp answers.", **common),
    }


@contextlib.contextmanager
def real() -> Iterator[dict[str, Agent]]:
    """Agents on the real APIs (keys from the environment)."""
    from plait.stores import GeminiFilesStore, MemoryStore

    yield _agents(MemoryStore(), {"gemini": GeminiFilesStore()}, None)


# --- running and printing -----------------------------------------------------------------------


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n / MB:.1f} MB" if n >= MB else f"{n / 1024:.1f} KB" if n >= 1024 else f"{n} B"


def _detail(text: str) -> str:
    return re.sub(r"(\d+) bytes", lambda m: _size(int(m.group(1))), text)


class _Printer:
    """Turns the run's stream into readable lines."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self.emit = emit
        self.text = ""
        self.model = ""
        self.calls = 0
        self.usage = Usage()
        self.shown = 0

    def flush(self) -> None:
        if self.text:
            self.emit(f"  {self.model.split(':')[0]}> {self.text.strip()}")
            self.text = ""

    def where(self, move: MediaMove) -> str:
        """Where a part went, in words (the destination's placement rule for tool media)."""
        if move.action == "inline":
            if not move.in_tool_result:
                return "inline (base64 in the user message)"
            from plait.providers import capabilities_for

            caps = capabilities_for(move.provider, self.model.partition(":")[2])
            if caps.placement(ContentKind(move.kind)) == "tool_result":
                return "inline (base64 inside the tool result)"
            return "inline (base64 in a follow-up user message)"
        return {"uploaded": f"uploaded to the {move.provider} file store",
                "file": "already in its file store", "url": "by URL (provider fetches)",
                "skipped": "not accepted: described in text"}.get(move.action, move.action)

    def __call__(self, ev: Any) -> None:
        if isinstance(ev, TurnStarted):
            self.flush()
            self.model = ev.model
            self.calls += 1
            self.emit(f"[{ev.model}] turn {ev.turn}")
        elif isinstance(ev, TurnFinished):
            self.usage = self.usage + ev.usage
        elif isinstance(ev, AgentTextDelta):
            self.text += ev.text
        elif isinstance(ev, MediaRouted):
            move = ev.move
            self.emit(f"  wire {move.provider}: {move.kind} {move.handle_id} from "
                      f"{move.origin or 'store'} → {self.where(move)}"
                      + (f" [{_detail(move.detail)}]" if move.detail else ""))
        elif isinstance(ev, TransferProgressed):
            p = ev.progress
            pct = 100 if p.finished else (p.done * 100 // p.total if p.total else 0)
            if p.finished or p.done == 0 or self.shown + 25 <= pct < 100:
                self.shown = 0 if p.finished else pct - pct % 25
                bar = "#" * (pct // 10) + "." * (10 - pct // 10)
                self.emit(f"  upload {p.provider} [{bar}] {pct:3d}% {_size(p.done)}")
        elif isinstance(ev, ToolCallStarted):
            self.flush()
            self.emit(f"  tool call {ev.call.name}({ev.call.arguments})")
        elif isinstance(ev, ToolCallFinished):
            parts = ev.result.output
            handles = [p.handle.id for p in parts
                       if isinstance(p, MediaPart) and p.handle is not None]
            what = f"{len(handles)} images → {', '.join(handles)}" if handles else \
                "".join(getattr(p, "text", "") for p in parts)[:80]
            status = "error" if ev.result.is_error else "ok"
            self.emit(f"  tool result ({status}, {ev.seconds * 1000:.0f} ms): {what}")


async def run_pipeline(emit: Callable[[str], None] = print, *,
                       video_path: str | None = None,
                       hooks: RunHooks | None = None) -> AgentResult:
    """Run the demo, printing its events through ``emit``; returns the final answer.

    :raises SystemExit: real mode was asked for without a video to watch.
    """
    live = all(os.environ.get(k) for k in KEYS)
    if live and not video_path:
        raise SystemExit("plait demo: API keys found; pass --video PATH to watch a real video")
    setup = real() if live else emulated()
    started = time.perf_counter()
    emit("plait demo: Gemini watches a video, Claude looks at key frames, GPT answers")
    emit("(API keys found: real providers)" if live else
         "(no API keys: local emulators speaking each provider's wire protocol, scripted "
         "replies)")
    with setup as agents:
        store = agents["watch"].store
        assert store is not None
        if video_path:
            video = await store.put(video_path, mime_type="video/mp4")
        else:
            video = await store.put(synthetic_video(), mime_type="video/mp4",
                                    display_name="quarterly-review.mp4")
        emit(f"video: {video.display_name} ({_size(video.byte_size)}) stored as {video.id}")
        printer = _Printer(emit)
        pipeline = VideoPipeline(agents, store=store, hooks=hooks)
        async with pipeline.start(VideoTask(video=video, question="What happens in this "
                                            "video, and what is the key takeaway?")) as run:
            async for ev in run.events():
                printer(ev)
            result: AgentResult = await run.result()
        printer.flush()
        for agent in agents.values():
            await agent.aclose()
        for files in agents["watch"].workflow.rehoster.file_stores.values():
            await files.aclose()  # type: ignore[attr-defined]
    usage = printer.usage
    emit("")
    emit(f"result: {result.output}")
    emit(f"{printer.calls} model calls over 3 providers, {usage.input_tokens} input / "
         f"{usage.output_tokens} output tokens, {time.perf_counter() - started:.2f} s")
    return result
