"""Loopback emulator of the OpenAI Responses API (``POST /v1/responses``).

A plain call gets a response object; ``stream: true`` gets the ``response.*`` SSE events
(``response.created``, ``output_item.added``/``done``, ``reasoning_summary_text.delta``,
``output_text.delta``, ``function_call_arguments.delta``, ``response.completed``). A reasoning
reply carries an ``encrypted_content`` so replay can be checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ._chat_emulators import ScriptedReply, _ChatLike, _pieces
from ._emulator import Received
from ._server import Response

__all__ = ["OpenAIResponsesEmulator"]


class OpenAIResponsesEmulator(_ChatLike):
    """``POST /v1/responses`` as OpenAI answers it (see module doc)."""

    def __init__(self, reply: ScriptedReply | None = None, *,
                 api_key: str | None = None) -> None:
        super().__init__(reply, auth=("authorization", f"Bearer {api_key}") if api_key
                         else None)

    def answer(self, request: Received, reply: ScriptedReply) -> Response:
        """Check the path, then render ``reply``."""
        if request.path != "/v1/responses":
            return Response.json({"error": {"message": f"no route {request.path}",
                                            "type": "invalid_request_error"}}, 404)
        return super().answer(request, reply)

    def render(self, body: Any, reply: ScriptedReply) -> Response:
        """A response object, or its SSE events when ``stream`` is set."""
        items = _items(reply)
        response = _response(body, reply, items)
        if not body.get("stream"):
            return Response.json(response, headers={"x-request-id": "req_emulated"})
        return Response.sse(_events(body, reply, items, response),
                            chunk_delay=reply.chunk_delay, cut_after=reply.cut_after)

    @staticmethod
    def context_too_long() -> Response:
        """HTTP 400 ``context_length_exceeded``."""
        return Response.json({"error": {
            "message": "Your input exceeds the context window of this model.",
            "type": "invalid_request_error", "code": "context_length_exceeded"}}, 400)


def _items(reply: ScriptedReply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.reasoning:
        items.append({"type": "reasoning", "id": "rs_emulated",
                      "summary": [{"type": "summary_text", "text": reply.reasoning}],
                      "encrypted_content": "gAAAA-emulated"})
    if reply.text:
        items.append({"type": "message", "id": "msg_emulated", "status": "completed",
                      "role": "assistant", "content": [
                          {"type": "output_text", "text": reply.text, "annotations": []}]})
    items.extend({"type": "function_call", "id": f"fc_{i}", "call_id": call_id, "name": name,
                  "arguments": arguments, "status": "completed"}
                 for i, (call_id, name, arguments) in enumerate(reply.tool_calls))
    return items


def _response(body: Any, reply: ScriptedReply, items: list[dict[str, Any]]) -> dict[str, Any]:
    incomplete = reply.finish_reason == "length"
    response: dict[str, Any] = {
        "id": "resp_emulated", "object": "response",
        "status": "incomplete" if incomplete else "completed",
        "model": body.get("model", "emulated"), "output": items,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens,
                  "total_tokens": reply.input_tokens + reply.output_tokens,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }
    if incomplete:
        response["incomplete_details"] = {"reason": "max_output_tokens"}
    return response


def _events(body: Any, reply: ScriptedReply, items: list[dict[str, Any]],
            response: dict[str, Any]) -> Iterator[tuple[str | None, Any]]:
    seq = 0

    def event(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        nonlocal seq
        seq += 1
        return data["type"], {**data, "sequence_number": seq}

    head = {**response, "status": "in_progress", "output": [], "usage": None}
    yield event({"type": "response.created", "response": head})
    yield event({"type": "response.in_progress", "response": head})
    for index, item in enumerate(items):
        kind = item["type"]
        if kind == "reasoning":
            yield event({"type": "response.output_item.added", "output_index": index,
                         "item": {**item, "summary": [], "encrypted_content": None}})
            for piece in _pieces(reply.reasoning):
                yield event({"type": "response.reasoning_summary_text.delta",
                             "item_id": item["id"], "output_index": index,
                             "summary_index": 0, "delta": piece})
        elif kind == "message":
            yield event({"type": "response.output_item.added", "output_index": index,
                         "item": {**item, "status": "in_progress", "content": []}})
            for piece in _pieces(reply.text):
                yield event({"type": "response.output_text.delta", "item_id": item["id"],
                             "output_index": index, "content_index": 0, "delta": piece})
        else:
            yield event({"type": "response.output_item.added", "output_index": index,
                         "item": {**item, "arguments": "", "status": "in_progress"}})
            for piece in _pieces(item["arguments"], 5):
                yield event({"type": "response.function_call_arguments.delta",
                             "item_id": item["id"], "output_index": index, "delta": piece})
            yield event({"type": "response.function_call_arguments.done",
                         "item_id": item["id"], "output_index": index,
                         "arguments": item["arguments"]})
        yield event({"type": "response.output_item.done", "output_index": index, "item": item})
    final = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    yield event({"type": final, "response": response})
