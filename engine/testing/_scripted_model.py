"""An in-process model for tests and benchmarks: replies come from a function, no HTTP.

It has the same surface the agent uses on a real provider (``name``, ``model``,
``capabilities_for``, ``complete``, ``stream``, ``aclose``), so ``Agent(connect=...)`` can run
on it::

    def reply(request: ModelRequest) -> ModelReply | str:
        return "hello"

    agent = Agent("scripted:any", connect=lambda _: ScriptedModel(reply))
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from .._messages import (
    FinishDelta,
    ModelReply,
    ModelRequest,
    StreamDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    UsageDelta,
)
from .._parts import Text

__all__ = ["ScriptedModel"]

ReplyFn = Callable[[ModelRequest], "ModelReply | str"]


class ScriptedModel:
    """Answers each request with ``reply(request)`` (or the next item of a list of replies).

    ``requests`` records what it was asked. ``capabilities`` defaults to a table that takes
    every media kind inline (up to 20 MB per request) and reads no file ids.
    """

    def __init__(self, reply: ReplyFn | Iterable[ModelReply | str], *,
                 name: str = "scripted", model: str = "scripted",
                 capabilities: Any = None) -> None:
        if callable(reply):
            self._reply: ReplyFn = reply
        else:
            queue = list(reply)

            def scripted(request: ModelRequest) -> ModelReply | str:
                if not queue:
                    raise RuntimeError("ScriptedModel: no scripted reply left")
                return queue.pop(0)
            self._reply = scripted
        self.name = name
        self.model = model
        self.requests: list[ModelRequest] = []
        self._caps = capabilities

    def capabilities_for(self, model: str) -> Any:
        """The capabilities given, or an all-kinds inline default."""
        if self._caps is None:
            from plait.providers import Capabilities

            from .._content import ContentKind

            kinds = frozenset({ContentKind.IMAGE, ContentKind.AUDIO, ContentKind.VIDEO,
                               ContentKind.DOCUMENT})
            self._caps = Capabilities(provider=self.name, tool_result_kinds=kinds,
                                      user_kinds=kinds, max_request_bytes=20 * 1024 * 1024)
        return self._caps

    def _answer(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        reply = self._reply(request)
        if isinstance(reply, str):
            return ModelReply([Text(reply)], Usage(1, 1), "stop", model=self.model)
        return reply

    async def complete(self, request: ModelRequest) -> ModelReply:
        """The scripted reply to ``request``."""
        return self._answer(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamDelta]:
        """The scripted reply as deltas: text, tool calls, usage, then the finish."""
        reply = self._answer(request)
        index = 0
        for part in reply.parts:
            if isinstance(part, Text):
                yield TextDelta(part.text)
            elif isinstance(part, ToolCall):
                yield ToolCallStart(index, part.id, part.name, part.signature)
                yield ToolCallDelta(index, part.arguments)
                yield ToolCallEnd(index)
                index += 1
        yield UsageDelta(reply.usage)
        yield FinishDelta(reply.finish_reason, reply.response_id, reply.model)

    async def aclose(self) -> None:
        """Nothing to close."""
