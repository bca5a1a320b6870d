"""Turn a stream of ``StreamDelta`` into the ``ModelReply`` a non-streaming call would return.

Parts keep the order in which they began: consecutive text deltas form one ``Text``,
consecutive reasoning deltas one ``Reasoning`` (a ``ReasoningDelta`` carrying a ``signature``,
``data`` or ``id`` completes the open block with them and closes it, so redacted or encrypted
reasoning survives for replay), and tool-call fragments are joined per ``index``.
``UsageDelta`` values are treated as snapshots that may each carry only some counters
(Anthropic reports input tokens at the start and output tokens at the end): the reply keeps the
largest value seen per counter.
"""

from __future__ import annotations

from collections.abc import AsyncIterable

from plait import (
    FinishDelta,
    MessagePart,
    ModelReply,
    Reasoning,
    ReasoningDelta,
    StreamDelta,
    Text,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    UsageDelta,
)

__all__ = ["Accumulator", "accumulate"]


class _Block:
    __slots__ = ("closed", "data", "fragments", "item_id", "kind", "name", "signature", "tool_id")

    def __init__(self, kind: str, tool_id: str = "", name: str = "",
                 signature: str | None = None) -> None:
        self.kind = kind
        self.fragments: list[str] = []
        self.tool_id = tool_id
        self.name = name
        self.signature = signature
        self.data: str | None = None
        self.item_id: str | None = None
        self.closed = False


class Accumulator:
    """Feed deltas with ``add``; read the reply with ``reply()`` at any point."""

    def __init__(self, provider: str | None = None) -> None:
        self.provider = provider
        self._blocks: list[_Block] = []
        self._tools: dict[int, _Block] = {}
        self._usage = Usage()
        self.finish: FinishDelta | None = None

    def add(self, delta: StreamDelta) -> None:
        """Fold one delta in."""
        last = self._blocks[-1] if self._blocks else None
        if isinstance(delta, TextDelta):
            if last is None or last.kind != "text":
                last = _Block("text")
                self._blocks.append(last)
            last.fragments.append(delta.text)
        elif isinstance(delta, ReasoningDelta):
            if last is None or last.kind != "reasoning" or last.closed:
                last = _Block("reasoning")
                self._blocks.append(last)
            last.fragments.append(delta.text)
            if delta.signature is not None:
                last.signature = delta.signature
            if delta.data is not None:
                last.data = delta.data
            if delta.id is not None:
                last.item_id = delta.id
            if delta.signature is not None or delta.data is not None or delta.id is not None:
                last.closed = True
        elif isinstance(delta, ToolCallStart):
            block = _Block("tool", delta.id, delta.name, delta.signature)
            self._tools[delta.index] = block
            self._blocks.append(block)
        elif isinstance(delta, ToolCallDelta):
            tool = self._tools.get(delta.index)
            if tool is None:  # a fragment before its start: keep it, the start fills the rest
                tool = _Block("tool")
                self._tools[delta.index] = tool
                self._blocks.append(tool)
            tool.fragments.append(delta.fragment)
        elif isinstance(delta, UsageDelta):
            u, v = self._usage, delta.usage
            self._usage = Usage(max(u.input_tokens, v.input_tokens),
                                max(u.output_tokens, v.output_tokens),
                                max(u.cache_read_tokens, v.cache_read_tokens),
                                max(u.cache_write_tokens, v.cache_write_tokens),
                                max(u.reasoning_tokens, v.reasoning_tokens))
        elif isinstance(delta, FinishDelta):
            self.finish = delta
        elif not isinstance(delta, ToolCallEnd):
            raise TypeError(f"not a stream delta: {type(delta).__name__}")

    def reply(self) -> ModelReply:
        """The reply assembled so far."""
        parts: list[MessagePart] = []
        for block in self._blocks:
            text = "".join(block.fragments)
            if block.kind == "text":
                parts.append(Text(text))
            elif block.kind == "reasoning":
                parts.append(Reasoning(text, provider=self.provider, signature=block.signature,
                                       data=block.data, id=block.item_id))
            else:
                parts.append(ToolCall(block.tool_id, block.name, text or "{}", block.signature))
        finish = self.finish
        return ModelReply(parts, self._usage, finish.reason if finish else None,
                          finish.response_id if finish else None,
                          finish.model if finish else None)


async def accumulate(deltas: AsyncIterable[StreamDelta], *,
                     provider: str | None = None) -> ModelReply:
    """Consume ``deltas`` and return the assembled ``ModelReply``."""
    acc = Accumulator(provider)
    async for delta in deltas:
        acc.add(delta)
    return acc.reply()
