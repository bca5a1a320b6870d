"""Loopback emulator of the Anthropic Messages API (``POST /v1/messages``).

Answers from the request: JSON for a plain call, the documented SSE sequence (``message_start``,
``content_block_*`` with ``thinking_delta`` / ``signature_delta`` / ``text_delta`` /
``input_json_delta``, ``message_delta`` with usage, ``message_stop``) when ``stream`` is set.
Demands ``x-api-key`` (when ``api_key`` is given) and ``anthropic-version`` like the real API.
``overloaded()`` and ``prompt_too_long()`` are the API's own error replies.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ._chat_emulators import ScriptedReply, _ChatLike, _pieces
from ._emulator import Received
from ._server import Response

__all__ = ["AnthropicEmulator"]

_STOP = {"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens"}


class AnthropicEmulator(_ChatLike):
    """``POST /v1/messages`` as Anthropic answers it (see module doc)."""

    def __init__(self, reply: ScriptedReply | None = None, *,
                 api_key: str | None = None) -> None:
        super().__init__(reply, auth=("x-api-key", api_key) if api_key else None)

    def answer(self, request: Received, reply: ScriptedReply) -> Response:
        """Check the path and version header, then render ``reply``."""
        if request.path != "/v1/messages":
            return _error(404, "not_found_error", f"no route {request.path}")
        if not request.header("anthropic-version"):
            return _error(400, "invalid_request_error", "anthropic-version header is required")
        return super().answer(request, reply)

    def render(self, body: Any, reply: ScriptedReply) -> Response:
        """A message object, or its SSE events when ``stream`` is set."""
        if body.get("stream"):
            return Response.sse(_events(body, reply), chunk_delay=reply.chunk_delay,
                                cut_after=reply.cut_after)
        content: list[dict[str, Any]] = []
        if reply.reasoning:
            content.append({"type": "thinking", "thinking": reply.reasoning,
                            "signature": "emulated-signature"})
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        content.extend({"type": "tool_use", "id": i, "name": n, "input": json.loads(a or "{}")}
                       for i, n, a in reply.tool_calls)
        return Response.json({
            "id": "msg_emulated", "type": "message", "role": "assistant",
            "model": body.get("model", "emulated"), "content": content,
            "stop_reason": _STOP.get(reply.finish_reason, reply.finish_reason),
            "stop_sequence": None,
            "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
        }, headers={"request-id": "req_emulated"})

    @staticmethod
    def overloaded() -> Response:
        """HTTP 529 ``overloaded_error``, as Anthropic sends under load."""
        return _error(529, "overloaded_error", "Overloaded")

    @staticmethod
    def prompt_too_long() -> Response:
        """HTTP 400 for a prompt over the context window."""
        return _error(400, "invalid_request_error",
                      "prompt is too long: 212000 tokens > 200000 maximum")


def _error(status: int, kind: str, message: str) -> Response:
    return Response.json({"type": "error", "error": {"type": kind, "message": message},
                          "request_id": "req_emulated"}, status,
                         headers={"request-id": "req_emulated"})


def _events(body: Any, reply: ScriptedReply) -> Iterator[tuple[str | None, Any]]:
    def event(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return data["type"], data

    yield event({"type": "message_start", "message": {
        "id": "msg_emulated", "type": "message", "role": "assistant", "content": [],
        "model": body.get("model", "emulated"), "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": 1}}})
    index = 0
    if reply.reasoning:
        yield event({"type": "content_block_start", "index": index,
                     "content_block": {"type": "thinking", "thinking": ""}})
        for piece in _pieces(reply.reasoning):
            yield event({"type": "content_block_delta", "index": index,
                         "delta": {"type": "thinking_delta", "thinking": piece}})
        yield event({"type": "content_block_delta", "index": index,
                     "delta": {"type": "signature_delta", "signature": "emulated-signature"}})
        yield event({"type": "content_block_stop", "index": index})
        index += 1
    if reply.text:
        yield event({"type": "content_block_start", "index": index,
                     "content_block": {"type": "text", "text": ""}})
        yield "ping", {"type": "ping"}
        for piece in _pieces(reply.text):
            yield event({"type": "content_block_delta", "index": index,
                         "delta": {"type": "text_delta", "text": piece}})
        yield event({"type": "content_block_stop", "index": index})
        index += 1
    for call_id, name, arguments in reply.tool_calls:
        yield event({"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": call_id, "name": name, "input": {}}})
        for piece in _pieces(arguments, 5):
            yield event({"type": "content_block_delta", "index": index,
                         "delta": {"type": "input_json_delta", "partial_json": piece}})
        yield event({"type": "content_block_stop", "index": index})
        index += 1
    yield event({"type": "message_delta",
                 "delta": {"stop_reason": _STOP.get(reply.finish_reason, reply.finish_reason),
                           "stop_sequence": None},
                 "usage": {"output_tokens": reply.output_tokens}})
    yield event({"type": "message_stop"})
