"""Loopback emulator of the Gemini API (``/v1beta/models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse``).

A plain call gets one ``GenerateContentResponse``; the streaming route sends several, data-only
SSE events, the last carrying ``finishReason`` and ``usageMetadata``. Function calls come whole,
with an ``id`` and (on the first) a ``thoughtSignature`` as Gemini 3 sends them. Demands
``x-goog-api-key`` when ``api_key`` is given.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ._chat_emulators import ScriptedReply, _ChatLike, _pieces
from ._emulator import Received
from ._server import Response

__all__ = ["GeminiEmulator"]

_ROUTE = re.compile(r"/v1beta/models/(?P<model>[^/:]+):(?P<action>generateContent|"
                    r"streamGenerateContent)")
_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS",
           "content_filter": "SAFETY"}
SIGNATURE = "ZW11bGF0ZWQtc2lnbmF0dXJl"


class GeminiEmulator(_ChatLike):
    """The Gemini API's generate routes (see module doc)."""

    def __init__(self, reply: ScriptedReply | None = None, *,
                 api_key: str | None = None) -> None:
        super().__init__(reply, auth=("x-goog-api-key", api_key) if api_key else None)

    def answer(self, request: Received, reply: ScriptedReply) -> Response:
        """Route on the path (the model and streaming are in the URL), then render."""
        match = _ROUTE.fullmatch(request.path)
        if match is None:
            return _error(404, "NOT_FOUND", f"no route {request.path}")
        if self.auth is not None and request.header(self.auth[0]) != self.auth[1]:
            return _error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid key.")
        try:
            body = request.json()
        except ValueError:
            return _error(400, "INVALID_ARGUMENT", "body is not JSON")
        if not isinstance(body, dict) or not body.get("contents"):
            return _error(400, "INVALID_ARGUMENT", "contents is not specified")
        model = match["model"]
        if match["action"] == "generateContent":
            return Response.json(_chunk(model, _parts(reply), reply, final=True),
                                 headers={"x-goog-request-id": "req_emulated"})
        if request.query.get("alt") != ["sse"]:
            return _error(400, "INVALID_ARGUMENT", "this emulator streams with alt=sse only")
        return Response(200, _sse(model, reply), headers={"content-type": "text/event-stream"},
                        chunk_delay=reply.chunk_delay, cut_after=reply.cut_after)

    @staticmethod
    def exhausted() -> Response:
        """HTTP 429 ``RESOURCE_EXHAUSTED`` with a ``Retry-After`` of 0 seconds."""
        response = _error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted")
        response.headers["retry-after"] = "0"
        return response


def _error(status: int, kind: str, message: str) -> Response:
    return Response.json({"error": {"code": status, "message": message, "status": kind}},
                         status)


def _parts(reply: ScriptedReply) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if reply.reasoning:
        parts.append({"text": reply.reasoning, "thought": True})
    if reply.text:
        parts.append({"text": reply.text})
    for index, (call_id, name, arguments) in enumerate(reply.tool_calls):
        part: dict[str, Any] = {"functionCall": {"id": call_id, "name": name,
                                                 "args": json.loads(arguments or "{}")}}
        if index == 0:
            part["thoughtSignature"] = SIGNATURE
        parts.append(part)
    return parts


def _chunk(model: str, parts: list[dict[str, Any]], reply: ScriptedReply, *,
           final: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": model,
                             "responseId": "resp-emulated"}
    if final:
        candidate["finishReason"] = _FINISH.get(reply.finish_reason, "STOP")
        chunk["usageMetadata"] = {"promptTokenCount": reply.input_tokens,
                                  "candidatesTokenCount": reply.output_tokens,
                                  "totalTokenCount": reply.input_tokens + reply.output_tokens}
    return chunk


def _sse(model: str, reply: ScriptedReply) -> Iterator[bytes]:
    chunks: list[list[dict[str, Any]]] = []
    chunks.extend([[{"text": p, "thought": True}] for p in _pieces(reply.reasoning, 8)])
    chunks.extend([[{"text": p}] for p in _pieces(reply.text, 8)])
    calls = [p for p in _parts(reply) if "functionCall" in p]
    chunks.append(calls or [{"text": ""}])
    for index, parts in enumerate(chunks):
        data = _chunk(model, parts, reply, final=index == len(chunks) - 1)
        yield f"data: {json.dumps(data)}\r\n\r\n".encode()
