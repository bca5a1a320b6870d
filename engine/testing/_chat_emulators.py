"""Loopback emulators of OpenAI Chat Completions (and its compatible family) and Ollama.

They answer from the request itself: a non-streaming request gets one JSON completion, a
streaming one gets the same reply as real chunks (SSE for Chat, NDJSON for Ollama), split so
that tool-call arguments arrive in fragments. Script ``reply(...)`` steps to choose the next
reply, or any ``Emulator`` failure step (``rate_limited``, ``server_error``, ``slow``), or
``cut_stream(after)`` to break a stream mid-way. ``auth`` makes the emulator demand one exact
header, as the real APIs do (``("api-key", "k")`` for Azure, ``("authorization", "Key k")`` for
fal); anything else gets a 401.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ._emulator import Emulator, Received
from ._server import Response

__all__ = ["OllamaEmulator", "OpenAIChatEmulator", "ScriptedReply"]


class ScriptedReply:
    """What the emulated model answers: text and/or tool calls ``(id, name, arguments)``."""

    def __init__(self, text: str = "", tool_calls: list[tuple[str, str, str]] | None = None,
                 *, reasoning: str = "", input_tokens: int = 11, output_tokens: int = 7,
                 finish_reason: str | None = None, cut_after: int | None = None,
                 chunk_delay: float = 0.0) -> None:
        self.text = text
        self.tool_calls = list(tool_calls or [])
        self.reasoning = reasoning
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.finish_reason = finish_reason or ("tool_calls" if self.tool_calls else "stop")
        self.cut_after = cut_after
        self.chunk_delay = chunk_delay


def _pieces(text: str, size: int = 4) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


class _ChatLike(Emulator):
    def __init__(self, reply: ScriptedReply | None = None, *,
                 auth: tuple[str, str] | None = None) -> None:
        super().__init__()
        self.reply = reply or ScriptedReply("Hello from the emulator.")
        self.auth = auth

    def script_reply(self, reply: ScriptedReply) -> _ChatLike:
        """Queue ``reply`` as the answer to the next request (streaming or not)."""
        self.script(lambda request: self.answer(request, reply))
        return self

    def handle(self, request: Received) -> Response:
        """Check auth, then answer with the default reply."""
        return self.answer(request, self.reply)

    def answer(self, request: Received, reply: ScriptedReply) -> Response:
        """The reply rendered for ``request`` (JSON, or a stream when it asked for one)."""
        if self.auth is not None and request.header(self.auth[0]) != self.auth[1]:
            return Response.json({"error": {"message": "invalid credentials",
                                            "type": "invalid_request_error"}}, 401)
        try:
            body = request.json()
        except ValueError:
            return Response.json({"error": {"message": "body is not JSON"}}, 400)
        return self.render(body, reply)

    def render(self, body: Any, reply: ScriptedReply) -> Response:
        raise NotImplementedError


class OpenAIChatEmulator(_ChatLike):
    """``POST .../chat/completions`` as OpenAI and the compatible APIs answer it."""

    def render(self, body: Any, reply: ScriptedReply) -> Response:
        """A completion object, or SSE chunks ending in ``[DONE]`` when ``stream`` is set."""
        model = body.get("model", "emulated")
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
            if reply.reasoning:
                message["reasoning_content"] = reply.reasoning
            if reply.tool_calls:
                message["tool_calls"] = [
                    {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                    for i, n, a in reply.tool_calls]
            return Response.json({
                "id": "chatcmpl-emulated", "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "message": message,
                             "finish_reason": reply.finish_reason}],
                "usage": _usage(reply)}, headers={"x-request-id": "req_emulated"})
        return Response.sse(self._events(body, reply), chunk_delay=reply.chunk_delay,
                            cut_after=reply.cut_after)

    def _events(self, body: Any, reply: ScriptedReply) -> Iterator[tuple[str | None, Any]]:
        model = body.get("model", "emulated")

        def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, Any]:
            return None, {"id": "chatcmpl-emulated", "object": "chat.completion.chunk",
                          "model": model, "choices": [{"index": 0, "delta": delta,
                                                       "finish_reason": finish}]}

        yield chunk({"role": "assistant", "content": ""})
        for piece in _pieces(reply.reasoning):
            yield chunk({"reasoning_content": piece})
        for piece in _pieces(reply.text):
            yield chunk({"content": piece})
        for index, (call_id, name, arguments) in enumerate(reply.tool_calls):
            yield chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                         "function": {"name": name, "arguments": ""}}]})
            for piece in _pieces(arguments, 5):
                yield chunk({"tool_calls": [{"index": index,
                                             "function": {"arguments": piece}}]})
        yield chunk({}, reply.finish_reason)
        if body.get("stream_options", {}).get("include_usage"):
            yield None, {"id": "chatcmpl-emulated", "object": "chat.completion.chunk",
                         "model": model, "choices": [], "usage": _usage(reply)}
        yield None, "[DONE]"


def _usage(reply: ScriptedReply) -> dict[str, int]:
    return {"prompt_tokens": reply.input_tokens, "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens}


class OllamaEmulator(_ChatLike):
    """``POST /api/chat``: one JSON object, or NDJSON lines ending with ``"done": true``."""

    def render(self, body: Any, reply: ScriptedReply) -> Response:
        """The reply as Ollama renders it (streams by default, like the real server)."""
        model = body.get("model", "emulated")
        calls = [{"function": {"name": n, "arguments": json.loads(a or "{}")}}
                 for _, n, a in reply.tool_calls]
        final = {"model": model, "created_at": "2026-01-01T00:00:00Z", "done": True,
                 "done_reason": "stop" if reply.finish_reason != "length" else "length",
                 "prompt_eval_count": reply.input_tokens, "eval_count": reply.output_tokens}
        if not body.get("stream", True):
            message: dict[str, Any] = {"role": "assistant", "content": reply.text}
            if reply.reasoning:
                message["thinking"] = reply.reasoning
            if calls:
                message["tool_calls"] = calls
            return Response.json({**final, "message": message})

        def lines() -> Iterator[bytes]:
            def line(message: dict[str, Any]) -> bytes:
                return json.dumps({"model": model, "created_at": "2026-01-01T00:00:00Z",
                                   "message": {"role": "assistant", **message},
                                   "done": False}).encode() + b"\n"
            for piece in _pieces(reply.reasoning):
                yield line({"content": "", "thinking": piece})
            for piece in _pieces(reply.text):
                yield line({"content": piece})
            if calls:
                yield line({"content": "", "tool_calls": calls})
            yield json.dumps({**final, "message": {"role": "assistant", "content": ""}}
                             ).encode() + b"\n"

        return Response(200, lines(), headers={"content-type": "application/x-ndjson"},
                         chunk_delay=reply.chunk_delay, cut_after=reply.cut_after)

