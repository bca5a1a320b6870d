"""Tool-call pairing: every call answered right after it, once, in call order.

Every provider rejects a history where an assistant turn's tool calls are not answered by the
messages that follow it (OpenAI: "must be followed by tool messages responding to each
'tool_call_id'"; Anthropic: "Did not find 1 tool_result block(s) at the beginning of this
message"; Gemini: "the number of function response parts is equal to the number of function call
parts"). ``pair_tool_results`` checks that up front and rewrites each batch into one ``tool``
message per result, in the order of the calls, so serializers can rely on the shape.
"""

from __future__ import annotations

from plait import ConversationError, Message, ToolCall, ToolResult

__all__ = ["pair_tool_results"]


def pair_tool_results(messages: list[Message]) -> list[Message]:
    """Return ``messages`` with each tool batch as one ``tool`` message per result, call order.

    Raises ``ConversationError`` when a call is unanswered or answered twice, a result names no
    pending call, or a ``tool`` message holds anything but ``ToolResult`` parts.
    """
    out: list[Message] = []
    i = 0
    n = len(messages)
    while i < n:
        message = messages[i]
        i += 1
        if message.role == "tool":
            raise ConversationError(
                f"message {i - 1}: tool results without a preceding assistant tool call"
            )
        out.append(message)
        calls = [p for p in message.parts if isinstance(p, ToolCall)] \
            if message.role == "assistant" else []
        if not calls:
            continue
        results: dict[str, ToolResult] = {}
        while i < n and messages[i].role == "tool":
            for part in messages[i].parts:
                if not isinstance(part, ToolResult):
                    raise ConversationError(
                        f"message {i}: a tool message may only hold tool results, "
                        f"got {type(part).__name__}"
                    )
                if part.call_id in results:
                    raise ConversationError(
                        f"message {i}: tool call {part.call_id!r} answered twice"
                    )
                results[part.call_id] = part
            i += 1
        ids = [c.id for c in calls]
        if len(set(ids)) != len(ids):
            raise ConversationError(f"message {len(out) - 1}: duplicate tool call ids {ids}")
        missing = [c for c in ids if c not in results]
        if missing:
            raise ConversationError(
                f"message {len(out) - 1}: tool call(s) {missing} have no result; every tool "
                "call must be answered before the conversation continues"
            )
        extra = [r for r in results if r not in set(ids)]
        if extra:
            raise ConversationError(f"tool result(s) {extra} answer no call of the preceding turn")
        out.extend(Message("tool", [results[c]]) for c in ids)
    return out
