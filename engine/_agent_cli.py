"""The agent's CLI subcommands: ``plait demo`` (the multi-provider pipeline) and ``plait wire``.

``plait wire CONVERSATION.json --provider NAME`` prints the exact request body plait would send
that provider for a saved conversation (``msgspec.json.encode(result.messages)``, or an object
with ``messages`` and optionally ``system``, ``tools`` and ``model``), with media abbreviated
unless ``--full``: for debugging what a provider receives.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from typing import Any

import anyio
import msgspec

__all__ = ["add_subcommands", "run_demo_command", "run_wire_command", "wire_request"]

# A typical model per provider, for ``--provider NAME`` without ``:model``.
DEFAULT_MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-4.1",
    "openai-responses": "gpt-5",
    "gemini": "gemini-2.5-flash",
    "bedrock": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "mistral": "mistral-large-latest",
    "ollama": "llama3.2",
}
_BASE64 = re.compile(r"^(data:[\w/+.-]+;base64,)?[A-Za-z0-9+/_-]{120,}={0,2}$")


def add_subcommands(sub: Any) -> dict[str, Callable[[argparse.Namespace], int]]:
    """Register ``demo`` and ``wire`` on an argparse subparsers object; returns the handlers."""
    demo = sub.add_parser("demo", help="run the multi-provider multimodal pipeline "
                                       "(local emulators when no API keys are set)")
    demo.add_argument("--video", help="a video file to watch (required with real API keys)")
    demo.add_argument("--engine", action="store_true",
                      help="run the engine-only demo (fan-out, join, retry) instead")
    demo.add_argument("--trace", action="store_true",
                      help="trace the run with OpenTelemetry and print the span tree")
    wire = sub.add_parser("wire", help="print the request plait would send a provider for a "
                                       "saved conversation")
    wire.add_argument("conversation", help="JSON file: a list of messages, or an object with "
                                           "'messages' (and 'system', 'tools', 'model')")
    wire.add_argument("--provider", required=True,
                      help="provider name or provider:model (e.g. anthropic, gemini:gemini-3-pro)")
    wire.add_argument("--full", action="store_true", help="print media in full")
    wire.add_argument("--store", help="directory of a LocalFileStore holding the "
                                      "conversation's content handles")
    return {"demo": run_demo_command, "wire": run_wire_command}


def run_demo_command(args: argparse.Namespace) -> int:
    """``plait demo``."""
    if getattr(args, "trace", False):
        from .telemetry._cli import traced_demo

        return traced_demo(engine=getattr(args, "engine", False),
                           video_path=getattr(args, "video", None))
    if getattr(args, "engine", False):
        from ._demo import run_demo

        anyio.run(run_demo)
        return 0
    from ._agent_demo import run_pipeline

    async def main() -> None:
        await run_pipeline(print, video_path=getattr(args, "video", None))

    anyio.run(main)
    return 0


def run_wire_command(args: argparse.Namespace) -> int:
    """``plait wire``."""
    try:
        with open(args.conversation, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise SystemExit(f"plait wire: cannot read {args.conversation}: {exc.strerror}") from None
    store = None
    if args.store:
        from plait.stores import LocalFileStore

        store = LocalFileStore(args.store)
    try:
        out = anyio.run(lambda: wire_request(raw, args.provider, full=args.full, store=store))
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise SystemExit(f"plait wire: {args.conversation} is not a conversation: {exc}") \
            from None
    sys.stdout.write(out + "\n")
    return 0


async def wire_request(conversation: bytes, provider: str, *, full: bool = False,
                       store: Any = None) -> str:
    """The request body (as indented JSON, media abbreviated unless ``full``) for ``provider``.

    :raises msgspec.ValidationError: the JSON is not a conversation.
    :raises ContentRejected: a part cannot be sent to that provider.
    """
    from plait.providers import connect

    from ._messages import Message, ModelRequest, ToolSpec
    from ._rehost import Rehoster

    data = msgspec.json.decode(conversation)
    if isinstance(data, list):
        data = {"messages": data}
    messages = msgspec.convert(data.get("messages", []), list[Message])
    tools = msgspec.convert(data.get("tools", []), list[ToolSpec])
    name, _, model = provider.partition(":")
    model = model or data.get("model") or DEFAULT_MODELS.get(name, "default")
    client = connect(f"{name}:{model}", api_key="plait-wire-no-key")
    try:
        caps = client.capabilities_for(client.model)
        rehoster = Rehoster([store] if store is not None else [])
        messages = await rehoster.rehost(messages, caps)
        request = ModelRequest(model=client.model, messages=messages, tools=tools,
                               system=data.get("system"))
        request, body = await client.prepare(request, stream=False)
        path, params = client.endpoint(request)
        text = body if isinstance(body, bytes) else b"".join([chunk async for chunk in body])
    finally:
        await client.aclose()
    wire = json.loads(text)
    if not full:
        wire = _abbreviate(wire)
    query = "?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""
    return f"POST {path}{query}\n" + json.dumps(wire, indent=2, ensure_ascii=False)


def _abbreviate(value: Any) -> Any:
    """Replace long base64 strings (and data URLs) by a short note with their size."""
    if isinstance(value, dict):
        return {k: _abbreviate(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_abbreviate(v) for v in value]
    if isinstance(value, str) and _BASE64.match(value):
        prefix, _, payload = value.rpartition(",") if value.startswith("data:") else \
            ("", "", value)
        size = len(payload) * 3 // 4 - (len(payload) - len(payload.rstrip("=")))
        return f"{prefix + ',' if prefix else ''}<base64: {size} bytes>"
    return value
