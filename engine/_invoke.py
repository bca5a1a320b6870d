"""``invoke_tool``: one tool call from the model's text to the result the model sees next.

The agent's dispatch step calls this once per tool call. It never raises for anything the model
or the tool did wrong: bad arguments, a tool exception, a timeout or an unconvertible return
value all become an ``is_error`` result whose text tells the model what happened (and, for
argument errors, which content ids it may use), with the exception kept in ``error`` for the
calling code. Cancellation of the caller still propagates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import msgspec

from ._content import ContentKind
from ._context import Context
from ._directory import describe_handle
from ._errors import (
    ContentError,
    KindMismatch,
    PlaitError,
    ToolError,
    ToolTimeout,
    UnknownHandle,
)
from ._messages import ToolCall, ToolResult
from ._parts import Text
from ._resolver import resolve_arguments
from ._tool_output import normalize_output
from ._tools import Tool
from .telemetry._current import current as current_telemetry
from .telemetry._genai import tool_span

__all__ = ["ToolInvocation", "invoke_tool"]

_MAX_ERROR_TEXT = 2000
_MAX_IDS_LISTED = 30


@dataclass(frozen=True, slots=True)
class ToolInvocation:
    """The outcome of one tool call.

    ``result`` is what goes back to the model; ``data`` is what calling code sees (the
    ``ToolOutput.data`` or the raw return value; ``None`` on error); ``error`` is the exception
    behind an ``is_error`` result.
    """

    result: ToolResult
    data: Any = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        """Whether the tool ran and its output was converted."""
        return self.error is None


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_ERROR_TEXT else text[: _MAX_ERROR_TEXT - 3] + "..."


def _usable_ids(ctx: Context | None) -> str:
    handles = list(ctx.handles) if ctx is not None else []
    if not handles:
        return "No content handles are available in this run."
    listed = ", ".join(describe_handle(h) for h in handles[-_MAX_IDS_LISTED:])
    more = len(handles) - _MAX_IDS_LISTED
    suffix = f" (and {more} older)" if more > 0 else ""
    return f"Content ids you may use: {listed}{suffix}."


def _kind_note(tool: Tool) -> str:
    """Remind the model that file parameters take any kind, when the tool has one."""
    marker = b'{"kind":"' + ContentKind.DOCUMENT.value.encode() + b'"}'
    if marker in msgspec.json.encode(tool.parameters):
        return " Parameters that take a document accept any file."
    return ""


def _argument_error_text(tool: Tool, exc: Exception, ctx: Context | None) -> str:
    if isinstance(exc, ContentError):  # a visible handle whose bytes the store cannot find
        return _clip(f"Tool {tool.name!r} did not run: its content could not be loaded ({exc}).")
    text = f"Tool {tool.name!r} did not run: invalid arguments. {exc}."
    if isinstance(exc, (UnknownHandle, KindMismatch)):
        text += f" {_usable_ids(ctx)}{_kind_note(tool)}"
    return _clip(text)


def _error(call: ToolCall, exc: BaseException, text: str) -> ToolInvocation:
    result = ToolResult(call_id=call.id, name=call.name, output=[Text(text)], is_error=True)
    return ToolInvocation(result=result, data=None, error=exc)


async def invoke_tool(tool: Tool, call: ToolCall, ctx: Context, *,
                      timeout: float | None = None) -> ToolInvocation:
    """Resolve ``call``'s arguments, run ``tool`` (within ``timeout`` or ``tool.timeout``) and
    convert its output; every failure becomes an ``is_error`` result, never an exception.

    Traced as ``execute_tool {name}``; the span is current while the tool runs, so the tool's
    own spans (and tasks it starts) nest under it.
    """
    with tool_span(current_telemetry(), call, description=tool.description) as record:
        invocation = await _invoke(tool, call, ctx, timeout)
        record(invocation.result, invocation.error)
    return invocation


async def _invoke(tool: Tool, call: ToolCall, ctx: Context,
                  timeout: float | None) -> ToolInvocation:
    try:
        arguments = await resolve_arguments(tool, call.arguments, ctx)
    except (ToolError, ContentError) as exc:
        return _error(call, exc, _argument_error_text(tool, exc, ctx))

    limit = timeout if timeout is not None else tool.timeout
    finished = False
    value: Any = None
    try:
        if limit is None:
            value = await tool.run(arguments, ctx)
            finished = True
        else:
            with anyio.move_on_after(limit):
                value = await tool.run(arguments, ctx)
                finished = True
    except Exception as exc:  # noqa: BLE001 - the tool's failure goes back to the model
        message = str(exc)
        detail = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
        return _error(call, exc, _clip(f"Tool {tool.name!r} failed: {detail}"))
    if not finished:
        assert limit is not None
        timed_out = ToolTimeout(tool.name, limit)
        return _error(call, timed_out, f"Tool {tool.name!r} timed out after {limit:g}s.")

    try:
        parts, raw, data = await normalize_output(value, tool_name=tool.name, ctx=ctx)
    except PlaitError as exc:
        return _error(call, exc, _clip(f"Tool {tool.name!r} ran, but its output could not be "
                                       f"returned: {exc}"))
    result = ToolResult(call_id=call.id, name=call.name, output=parts, raw=raw)
    return ToolInvocation(result=result, data=data, error=None)
