"""Loopback emulator of Bedrock Converse (``/model/{id}/converse`` and ``/converse-stream``).

The streaming route answers with real ``application/vnd.amazon.eventstream`` frames (prelude and
message CRCs included): ``messageStart``, ``contentBlockStart`` for tool use,
``contentBlockDelta`` (text, ``toolUse.input`` fragments, ``reasoningContent``),
``contentBlockStop``, ``messageStop`` and ``metadata``. Authentication is checked like AWS does:
``sigv4=(access_key_id, secret_access_key)`` recomputes the SigV4 signature of every request with
botocore (403 ``SignatureDoesNotMatch`` otherwise); ``api_key`` demands a bearer token.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

from ._chat_emulators import ScriptedReply, _ChatLike, _pieces
from ._emulator import Received
from ._server import Response

__all__ = ["BedrockEmulator"]

_ROUTE = re.compile(r"/model/(?P<model>[^/]+)/(?P<action>converse|converse-stream)")
_STOP = {"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens",
         "content_filter": "content_filtered"}
_AUTH = re.compile(r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)"
                   r"/(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<signed>[^,]+), "
                   r"Signature=(?P<signature>[0-9a-f]{64})")


class BedrockEmulator(_ChatLike):
    """Bedrock Converse routes (see module doc). ``models`` records the decoded model ids."""

    def __init__(self, reply: ScriptedReply | None = None, *,
                 sigv4: tuple[str, str] | None = None, api_key: str | None = None) -> None:
        super().__init__(reply, auth=("authorization", f"Bearer {api_key}") if api_key
                         else None)
        self.sigv4 = sigv4
        self.models: list[str] = []

    def answer(self, request: Received, reply: ScriptedReply) -> Response:
        """Route, authenticate, then render JSON or event-stream frames."""
        match = _ROUTE.fullmatch(request.path)
        if match is None:
            return _error(404, "ResourceNotFoundException", f"no route {request.path}")
        if self.auth is not None and request.header(self.auth[0]) != self.auth[1]:
            return _error(403, "AccessDeniedException", "invalid bearer token")
        if self.sigv4 is not None and (problem := self._check_signature(request)):
            return _error(403, "SignatureDoesNotMatch", problem)
        try:
            body = request.json()
        except ValueError:
            return _error(400, "ValidationException", "body is not JSON")
        if not isinstance(body, dict) or not body.get("messages"):
            return _error(400, "ValidationException", "messages is required")
        self.models.append(unquote(match["model"]))
        if match["action"] == "converse":
            return Response.json(_converse(reply),
                                 headers={"x-amzn-requestid": "req-emulated"})
        return Response(200, _frames(reply),
                        headers={"content-type": "application/vnd.amazon.eventstream",
                                 "x-amzn-requestid": "req-emulated"},
                        chunk_delay=reply.chunk_delay, cut_after=reply.cut_after)

    def _check_signature(self, request: Received) -> str | None:
        from botocore.auth import SigV4Auth  # type: ignore[import-untyped]
        from botocore.awsrequest import AWSRequest  # type: ignore[import-untyped]
        from botocore.credentials import Credentials  # type: ignore[import-untyped]

        assert self.sigv4 is not None
        found = _AUTH.fullmatch(request.header("authorization") or "")
        if found is None:
            return "missing or malformed SigV4 Authorization header"
        if found["key"] != self.sigv4[0] or found["service"] != "bedrock":
            return "unknown access key or wrong service"
        names = found["signed"].split(";")
        url = f"http://{request.header('host')}{request.path}"
        aws = AWSRequest(method=request.method, url=url, data=request.body,
                         headers={n: request.header(n) or "" for n in names if n != "host"})
        aws.context["timestamp"] = request.header("x-amz-date")
        signer = SigV4Auth(Credentials(*self.sigv4), "bedrock", found["region"])
        expected = signer.signature(signer.string_to_sign(aws, signer.canonical_request(aws)),
                                    aws)
        if expected != found["signature"]:
            return "The request signature we calculated does not match the signature you provided"
        return None

    @staticmethod
    def throttled() -> Response:
        """HTTP 429 ``ThrottlingException`` (Bedrock sends no Retry-After)."""
        return _error(429, "ThrottlingException", "Too many requests, please wait.")

    @staticmethod
    def input_too_long() -> Response:
        """HTTP 400 ``ValidationException`` for an input over the context window."""
        return _error(400, "ValidationException", "Input is too long for requested model.")


def _error(status: int, kind: str, message: str) -> Response:
    return Response.json({"message": message}, status,
                         headers={"x-amzn-errortype": f"{kind}:http://internal.amazon.com/",
                                  "x-amzn-requestid": "req-emulated"})


def _converse(reply: ScriptedReply) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.reasoning:
        content.append({"reasoningContent": {"reasoningText": {
            "text": reply.reasoning, "signature": "emulated-signature"}}})
    if reply.text:
        content.append({"text": reply.text})
    content.extend({"toolUse": {"toolUseId": i, "name": n, "input": json.loads(a or "{}")}}
                   for i, n, a in reply.tool_calls)
    return {"output": {"message": {"role": "assistant", "content": content}},
            "stopReason": _STOP.get(reply.finish_reason, reply.finish_reason),
            "usage": _usage(reply), "metrics": {"latencyMs": 12}}


def _usage(reply: ScriptedReply) -> dict[str, int]:
    return {"inputTokens": reply.input_tokens, "outputTokens": reply.output_tokens,
            "totalTokens": reply.input_tokens + reply.output_tokens}


def _frames(reply: ScriptedReply) -> Iterator[bytes]:
    from plait.providers._eventstream import encode_frame

    def event(kind: str, payload: dict[str, Any]) -> bytes:
        return encode_frame({":event-type": kind, ":content-type": "application/json",
                             ":message-type": "event"},
                            json.dumps({**payload, "p": "abcdefghij"}).encode())

    yield event("messageStart", {"role": "assistant"})
    index = 0
    if reply.reasoning:
        for piece in _pieces(reply.reasoning):
            yield event("contentBlockDelta", {"contentBlockIndex": index, "delta": {
                "reasoningContent": {"text": piece}}})
        yield event("contentBlockDelta", {"contentBlockIndex": index, "delta": {
            "reasoningContent": {"signature": "emulated-signature"}}})
        yield event("contentBlockStop", {"contentBlockIndex": index})
        index += 1
    if reply.text:
        for piece in _pieces(reply.text):
            yield event("contentBlockDelta", {"contentBlockIndex": index,
                                              "delta": {"text": piece}})
        yield event("contentBlockStop", {"contentBlockIndex": index})
        index += 1
    for call_id, name, arguments in reply.tool_calls:
        yield event("contentBlockStart", {"contentBlockIndex": index, "start": {
            "toolUse": {"toolUseId": call_id, "name": name}}})
        for piece in _pieces(arguments, 5):
            yield event("contentBlockDelta", {"contentBlockIndex": index,
                                              "delta": {"toolUse": {"input": piece}}})
        yield event("contentBlockStop", {"contentBlockIndex": index})
        index += 1
    yield event("messageStop", {"stopReason": _STOP.get(reply.finish_reason,
                                                        reply.finish_reason)})
    yield event("metadata", {"usage": _usage(reply), "metrics": {"latencyMs": 12}})
