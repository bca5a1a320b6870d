"""Agent benchmarks: (1) agent-loop overhead per turn, plait vs pydantic-ai, same run;
(2) rehosting a 1 GiB file between two file-store emulators: MB/s and peak RSS growth.

    python benchmarks/agent.py            # full: 1 GiB rehost, 2,000 turns
    python benchmarks/agent.py --quick    # 64 MiB rehost, 300 turns

The last line is one JSON object: ``plait_turn_us``, ``pydantic_ai_turn_us``, ``rehost_mb_s``,
``rehost_rss_growth_mb``. Goals: plait's turn ≤ 1/5 of pydantic-ai's; RSS growth ≤ 64 MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import anyio

MB = 1024 * 1024


# --- (2) rehost -----------------------------------------------------------------------------


def _rss_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> None:
    """Reset VmHWM to the current RSS (Linux: ``5`` to ``/proc/self/clear_refs``)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def _serve_emulator(role: str, size: int) -> None:
    """Child process: one emulator (``src``: OpenAI with a seeded ``size``-byte file, ``dst``:
    Gemini), serving until stdin ends. Emulators run in their own processes so the parent's
    RSS measures plait alone and the emulators do not compete with it for one GIL."""
    from plait.testing import GeminiFilesEmulator, OpenAIFilesEmulator

    if role == "src":
        block = os.urandom(MB)
        with OpenAIFilesEmulator() as src:
            file_id = src.seed((block for _ in range(size // MB)), filename="talk.mp4")
            print(json.dumps({"url": src.url, "key": src.api_key, "file_id": file_id}),
                  flush=True)
            sys.stdin.read()
    else:
        with GeminiFilesEmulator(processing_polls=0) as dst:
            print(json.dumps({"url": dst.url, "key": dst.api_key}), flush=True)
            sys.stdin.read()


def _spawn(role: str, size: int) -> tuple[Any, dict[str, str]]:
    import subprocess

    child = subprocess.Popen([sys.executable, __file__, "--serve-emulator", role, str(size)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    return child, json.loads(child.stdout.readline())


async def rehost_benchmark(size: int) -> tuple[float, float]:
    """Rehost ``size`` bytes from an OpenAI file (downloaded) into Gemini Files (resumable).

    Returns (MB/s, peak RSS growth in MiB of this process; the emulators run in a child).
    """
    from plait import Message, ProviderFileSource, Video
    from plait._rehost import Rehoster
    from plait.providers import capabilities_for
    from plait.stores import GeminiFilesStore, OpenAIFilesStore

    gemini = capabilities_for("gemini", "gemini-3-pro-preview")
    children = [_spawn("src", size), _spawn("dst", size)]
    (_, src_info), (_, dst_info) = children
    try:
        async with (
            OpenAIFilesStore(api_key=src_info["key"], base_url=src_info["url"]) as src,
            GeminiFilesStore(api_key=dst_info["key"], base_url=dst_info["url"]) as dst,
        ):
            handle = await src.attach(src_info["file_id"], mime_type="video/mp4")
            rehoster = Rehoster([src], {"openai": src, "gemini": dst})
            conversation = [Message.user("summarise", Video.from_handle(handle))]
            _reset_peak()
            before = _rss_kb("VmRSS")
            start = time.perf_counter()
            out = await rehoster.rehost(conversation, gemini)
            elapsed = time.perf_counter() - start
            peak = _rss_kb("VmHWM")
            source = out[0].parts[1].source  # type: ignore[union-attr]
            assert isinstance(source, ProviderFileSource)
            reply = await dst.client.get(f"{dst_info['url']}/v1beta/{source.file_id}",
                                         headers={"x-goog-api-key": dst_info["key"]})
            assert int(reply.json()["sizeBytes"]) == size, "rehosted size differs"
    finally:
        for child, _ in children:
            child.stdin.close()
            child.wait(timeout=30)
    return size / MB / elapsed, (peak - before) / 1024


# --- (1) agent-loop overhead ------------------------------------------------------------------


PER_RUN = 10  # model turns per run: nine with one tool call each, then the answer


async def plait_turns(turns: int) -> float:
    """Microseconds per model turn of plait's agent loop with an instant in-process model."""
    from plait import Agent, ModelReply, ModelRequest, Text, ToolCall, Usage, tool
    from plait.testing import ScriptedModel

    def reply(request: ModelRequest) -> ModelReply:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < PER_RUN - 1:
            return ModelReply([ToolCall(f"call_{done}", "add", f'{{"a": {done}, "b": 1}}')],
                              Usage(10, 5), "tool_calls")
        return ModelReply([Text("done")], Usage(10, 2), "stop")

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    model = ScriptedModel(reply)
    agent = Agent("scripted:bench", tools=[add], connect=lambda _: model, stream=False,
                  max_turns=PER_RUN + 1)
    runs = max(1, turns // PER_RUN)
    result = await agent.run("go")  # warm up
    assert result.turns == PER_RUN and result.output == "done", result
    start = time.perf_counter()
    for _ in range(runs):
        await agent.run("go")
    return (time.perf_counter() - start) / (runs * PER_RUN) * 1e6


def pydantic_ai_turns(turns: int) -> float:
    """Microseconds per model turn of pydantic-ai with a FunctionModel (one tool call/turn)."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls = sum(1 for m in messages for p in getattr(m, "parts", ())
                    if type(p).__name__ == "ToolReturnPart")
        if calls < PER_RUN - 1:
            return ModelResponse(parts=[ToolCallPart("add", {"a": calls, "b": 1})])
        return ModelResponse(parts=[TextPart("done")])

    agent: Any = Agent(FunctionModel(model))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    runs = max(1, turns // PER_RUN)
    agent.run_sync("go")  # warm up
    start = time.perf_counter()
    for _ in range(runs):
        agent.run_sync("go")
    return (time.perf_counter() - start) / (runs * PER_RUN) * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    parser.add_argument("--serve-emulator", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_emulator:
        _serve_emulator(args.serve_emulator[0], int(args.serve_emulator[1]))
        return
    size = 64 * MB if args.quick else 1024 * MB
    turns = 300 if args.quick else 2000

    result: dict[str, float | None] = {}
    plait_us = anyio.run(plait_turns, turns)
    pai_us = pydantic_ai_turns(turns)
    print(f"agent turn (one tool call per turn, in-process model): plait {plait_us:.1f} us, "
          f"pydantic-ai {pai_us:.1f} us ({pai_us / plait_us:.1f}x)")
    mb_s, growth = anyio.run(rehost_benchmark, size)
    print(f"rehost {size // MB} MiB openai→gemini: {mb_s:.0f} MB/s, peak RSS growth "
          f"{growth:.1f} MiB")
    result.update(plait_turn_us=round(plait_us, 1), pydantic_ai_turn_us=round(pai_us, 1),
                  rehost_mb_s=round(mb_s, 1), rehost_rss_growth_mb=round(growth, 1))
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
