"""``mcp_tools``: the tools of an MCP server as plait tools.

The server describes and validates its own tools, so each becomes a ``Tool.from_schema`` whose
call forwards the parsed arguments. Results come back as parts: text stays text, images and
audio become media parts (put into the run's store by the normal tool-output path), embedded
resources become documents, and structured content is what the calling code sees as ``data``.

The ``mcp`` package is an optional extra (``pip install plait[mcp]``); nothing here imports it, the
session object is used by duck typing. Field names are read in both the 1.x (camelCase) and 2.x
(snake_case) spellings of the SDK's types.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from ._context import Context
from ._errors import ToolError
from ._parts import Audio, Document, Image, Text
from ._tool_output import OutputPart, ToolOutput
from ._tools import Tool

__all__ = ["mcp_tools"]

_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def _field(obj: Any, *names: str) -> Any:
    """The first of ``names`` present on ``obj`` (SDK objects) or in it (plain dicts)."""
    for name in names:
        value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
        if value is not None:
            return value
    return None


def _decode(data: str, what: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ToolError(f"the MCP server sent {what} that is not valid base64") from None


def _resource_part(resource: Any) -> OutputPart:
    uri = str(_field(resource, "uri") or "")
    name = uri.rstrip("/").rsplit("/", 1)[-1] or None
    mime = _field(resource, "mime_type", "mimeType")
    text = _field(resource, "text")
    if text is not None:
        return Document.from_bytes(str(text).encode("utf-8"), mime or "text/plain", name=name)
    blob = _field(resource, "blob")
    data = _decode(str(blob or ""), f"resource {uri!r}")
    return Document.from_bytes(data, mime or "application/octet-stream", name=name)


def _content_part(item: Any) -> OutputPart:
    """One MCP content block as a plait part."""
    kind = _field(item, "type")
    if kind == "text":
        return Text(str(_field(item, "text") or ""))
    if kind in ("image", "audio"):
        data = _decode(str(_field(item, "data") or ""), f"{kind} data")
        mime = str(_field(item, "mime_type", "mimeType") or "application/octet-stream")
        return (Image if kind == "image" else Audio).from_bytes(data, mime)
    if kind == "resource":
        return _resource_part(_field(item, "resource"))
    if kind == "resource_link":
        name = _field(item, "name") or ""
        return Text(f"[resource {name}: {_field(item, 'uri')}]")
    return Text(f"[unsupported MCP content of type {kind!r}]")


def _plait_name(name: str, prefix: str | None) -> str:
    full = f"{prefix}_{name}" if prefix else name
    return _INVALID_NAME_CHARS.sub("_", full)[:64] or "mcp_tool"


def _wrap(session: Any, listed: Any, prefix: str | None, timeout: float | None) -> Tool:
    server_name = str(_field(listed, "name"))

    async def call(arguments: dict[str, Any], ctx: Context | None) -> ToolOutput[Any]:
        result = await session.call_tool(server_name, arguments)
        parts = [_content_part(item) for item in (_field(result, "content") or [])]
        if _field(result, "is_error", "isError"):
            text = " ".join(p.text for p in parts if isinstance(p, Text)) or "no details"
            raise ToolError(f"the MCP tool {server_name!r} reported an error: {text}")
        structured = _field(result, "structured_content", "structuredContent")
        return ToolOutput(data=structured if structured is not None else parts, llm=parts)

    schema = _field(listed, "input_schema", "inputSchema")
    return Tool.from_schema(
        _plait_name(server_name, prefix), call,
        description=str(_field(listed, "description") or ""),
        parameters=dict(schema) if schema else None, timeout=timeout,
    )


async def _list_all(session: Any) -> list[Any]:
    listed: list[Any] = []
    cursor: str | None = None
    while True:
        if cursor is None:
            page = await session.list_tools()
        else:
            try:
                from mcp import types

                params = types.PaginatedRequestParams(cursor=cursor)
                page = await session.list_tools(params=params)
            except (TypeError, AttributeError):  # the 1.x SDK takes the cursor directly
                page = await session.list_tools(cursor=cursor)
        listed.extend(_field(page, "tools") or [])
        cursor = _field(page, "next_cursor", "nextCursor")
        if not cursor:
            return listed


async def mcp_tools(session: Any, *, prefix: str | None = None,
                    timeout: float | None = None) -> list[Tool]:
    """Wrap every tool of an initialised MCP ``ClientSession`` as a plait ``Tool``.

    ``prefix`` is prepended to the names (``prefix_name``) to keep several servers apart;
    ``timeout`` applies to each call. A result the server flags as an error is raised as
    ``ToolError`` inside the call, which ``invoke_tool`` turns into an error result.
    """
    return [_wrap(session, listed, prefix, timeout) for listed in await _list_all(session)]
