"""Serializer throughput: a 50-message conversation with 20 inline 1 MiB images, to wire bytes.

Each provider module builds its request (pairing, placement, media encoding) and the body is
encoded to JSON bytes, as ``Provider.complete`` does before sending. Two figures per provider:

- **warm**: the steady state of a conversation, which resends the same media every turn: the
  provider's ``EncodeCache`` already holds each image's base64 (encoded once per conversation).
- **cold**: a fresh cache every time, so every image is base64-encoded again (the first turn).

Baseline, measured in the same run: ``msgspec.json.encode`` of an equivalent prebuilt wire dict
(OpenAI Chat shape, base64 strings already in place). Throughput is wire bytes produced per
second. Goal: every provider's warm figure ≥ 0.5× the baseline, ≥ 8 providers.

    python benchmarks/serialize.py [--quick]

The last line is JSON: ``{"providers": {name: mb_s}, "providers_cold": {...},
"ratio_to_baseline": {name: warm / baseline beside it}, "msgspec_baseline_mb_s": x}``. Calls
are interleaved with baseline calls so machine load hits both alike; the goal is judged on
the ratio.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import msgspec

from plait import Image, Message, ModelRequest, Text, ToolCall, ToolResult, ToolSpec
from plait.providers import EncodeCache, MediaEncoder, encode_body
from plait.providers._registry import get_spec, wire_module

MIB = 1024 * 1024

# One vision-capable model per provider, so images really are serialized. DeepSeek is left out:
# its models take no images, so its "serialization" of this conversation is 20 text notes.
MODELS = {
    "openai": "gpt-4.1",
    "azure": "gpt-4o",
    "mistral": "mistral-medium-latest",
    "groq": "meta-llama/llama-4-scout-17b-16e-instruct",
    "together": "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8",
    "fireworks": "accounts/fireworks/models/llama4-maverick-instruct-basic",
    "perplexity": "sonar-pro",
    "xai": "grok-4",
    "openrouter": "openai/gpt-4o",
    "fal": "google/gemini-2.5-flash",
    "ollama": "llava:13b",
    "anthropic": "claude-sonnet-4-5",
    "openai-responses": "gpt-4.1",
    "gemini": "gemini-2.5-flash",
    "bedrock": "anthropic.claude-sonnet-4-20250514-v1:0",
}


def conversation(images: int = 20, messages: int = 50) -> ModelRequest:
    """50 messages; 20 distinct 1 MiB images, half returned by tools, half in user turns."""
    blobs = [os.urandom(MIB) for _ in range(images)]
    history: list[Message] = [Message.user("Here are the first screenshots.")]
    tool_images = blobs[: images // 2]
    user_images = blobs[images // 2:]
    turn = 0
    while len(history) < messages - 1:
        call = ToolCall(f"call_{turn:04d}", "screenshot", json.dumps({"page": turn}))
        history.append(Message.assistant(f"Taking screenshot {turn}.", call))
        output: list[Any] = [Text(f"Screenshot {turn} of the dashboard, 1280x800.")]
        if tool_images:
            output.append(Image.from_bytes(tool_images.pop(), "image/png",
                                           name=f"shot{turn}.png"))
        history.append(Message("tool", [ToolResult(call.id, call.name, output)]))
        parts: list[Any] = [Text(f"Compare with reference {turn}. " * 4)]
        if user_images:
            parts.append(Image.from_bytes(user_images.pop(), "image/png", name=f"ref{turn}.png"))
        history.append(Message("user", parts))
        turn += 1
    history = history[: messages - 1]
    if history[-1].role == "assistant":  # never end on unanswered calls
        history.pop()
    history.append(Message.user("Summarise the differences."))
    tools = [ToolSpec("screenshot", "Take a screenshot", {
        "type": "object", "properties": {"page": {"type": "integer"}}})]
    return ModelRequest(model="", messages=history, tools=tools, system="You compare UIs.")


def baseline_dict(request: ModelRequest) -> dict[str, Any]:
    """The same conversation as a prebuilt OpenAI-Chat-shaped dict, base64 already encoded."""
    out: list[dict[str, Any]] = [{"role": "system", "content": request.system}]
    pending: list[dict[str, Any]] = []
    for message in request.messages:
        content: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, Text):
                content.append({"type": "text", "text": part.text})
            elif isinstance(part, Image):
                content.append({"type": "image_url", "image_url": {
                    "url": "data:image/png;base64," + base64.b64encode(
                        part.source.data).decode()}})  # type: ignore[union-attr]
            elif isinstance(part, ToolCall):
                content.append({"id": part.id, "type": "function", "function": {
                    "name": part.name, "arguments": part.arguments}})
            elif isinstance(part, ToolResult):
                for item in part.output:
                    if isinstance(item, Image):
                        pending.append({"type": "image_url", "image_url": {
                            "url": "data:image/png;base64," + base64.b64encode(
                                item.source.data).decode()}})  # type: ignore[union-attr]
                out.append({"role": "tool", "tool_call_id": part.call_id,
                            "content": "\n".join(i.text for i in part.output
                                                 if isinstance(i, Text))})
        if message.role == "tool":
            continue
        if pending:
            out.append({"role": "user", "content": pending})
            pending = []
        out.append({"role": message.role, "content": content})
    return {"model": "gpt-4.1", "messages": out}


def measure_pair(fn: Callable[[], bytes], base: Callable[[], bytes],
                 repeats: int) -> tuple[float, float, int]:
    """Median seconds of ``fn`` and of the baseline, calls interleaved so that load from
    other processes on the machine hits both alike; plus ``fn``'s output size."""
    size = len(fn())  # warm-up (for the warm figure: the conversation's first encode)
    base()
    times: list[float] = []
    base_times: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
        base()
        base_times.append(time.perf_counter() - start)
    return statistics.median(times), statistics.median(base_times), size


def run_provider(name: str, model: str, request: ModelRequest, base: Callable[[], bytes],
                 base_size: int, repeats: int) -> tuple[float, float, float, int] | None:
    """(warm MB/s, cold MB/s, baseline MB/s next to them, wire size) for one provider."""
    try:
        wire = wire_module(get_spec(name))
    except Exception as exc:  # noqa: BLE001 - a module still being written is skipped
        print(f"{name:>17}: skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
        return None
    req = msgspec.structs.replace(request, model=model)
    caps = wire.CAPABILITIES.lookup(model)
    cache = EncodeCache()

    def warm() -> bytes:
        body = encode_body(wire.build_request(req, caps=caps, media=MediaEncoder(cache)))
        assert isinstance(body, bytes)
        return body

    def cold() -> bytes:
        body = encode_body(wire.build_request(req, caps=caps, media=MediaEncoder()))
        assert isinstance(body, bytes)
        return body

    w_seconds, b_seconds, size = measure_pair(warm, base, repeats)
    c_seconds, _, _ = measure_pair(cold, base, max(1, repeats // 3))
    return size / w_seconds / 1e6, size / c_seconds / 1e6, base_size / b_seconds / 1e6, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else 9

    request = conversation()
    prebuilt = baseline_dict(request)

    def base() -> bytes:
        return msgspec.json.encode(prebuilt)

    base_size = len(base())
    warm: dict[str, float] = {}
    cold: dict[str, float] = {}
    ratio: dict[str, float] = {}
    baselines: list[float] = []
    for name, model in MODELS.items():
        result = run_provider(name, model, request, base, base_size, repeats)
        if result is None:
            continue
        w, c, b, size = result
        baselines.append(b)
        warm[name], cold[name], ratio[name] = round(w, 1), round(c, 1), round(w / b, 2)
        print(f"{name:>17}: {size / 1e6:5.1f} MB  warm {w:7,.0f} MB/s ({w / b:4.2f}x the "
              f"baseline beside it, {b:,.0f} MB/s)  cold {c:6,.0f} MB/s ({c / b:4.2f}x)")
    baseline = statistics.median(baselines)
    print(f"msgspec.json.encode of the prebuilt dict ({base_size / 1e6:.1f} MB): "
          f"median {baseline:,.0f} MB/s")
    # The goal is judged on each provider's ratio to the baseline measured beside it: on a
    # shared machine the absolute figures drift with other processes' load.
    slow = [n for n, r in ratio.items() if r < 0.5]
    print(f"{len(warm)} providers; warm below 0.5x the baseline: {slow or 'none'}")
    print(json.dumps({"providers": warm, "providers_cold": cold, "ratio_to_baseline": ratio,
                      "msgspec_baseline_mb_s": round(baseline, 1)}))


if __name__ == "__main__":
    main()
