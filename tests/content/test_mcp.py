"""MCP tools adapted into plait tools, against a real MCP server started over stdio."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from plait import (
    Audio,
    ContentKind,
    Context,
    Document,
    Image,
    InvalidToolArguments,
    Text,
    ToolCall,
    ToolError,
    invoke_tool,
    mcp_tools,
)
from plait.stores import MemoryStore

SERVER = Path(__file__).with_name("mcp_server.py")


@asynccontextmanager
async def _session() -> AsyncIterator[Any]:
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    with open(os.devnull, "w") as quiet:
        async with (stdio_client(params, errlog=quiet) as (read, write),
                    ClientSession(read, write) as session):
            await session.initialize()
            yield session


async def test_mcp_tools_end_to_end() -> None:
    store = MemoryStore()
    ctx = Context(run_id="r", store=store)
    async with _session() as session:
        tools = {t.name: t for t in await mcp_tools(session, prefix="srv")}
        assert set(tools) == {"srv_add", "srv_snapshot", "srv_fail"}
        add = tools["srv_add"]
        assert add.description == "Add two integers."
        assert add.parameters["properties"]["a"]["type"] == "integer"
        assert add.spec.name == "srv_add"

        summed = await invoke_tool(add, ToolCall("c1", "srv_add", '{"a": 2, "b": 40}'), ctx)
        assert summed.ok and summed.result.output == [Text("42")]
        assert summed.data == {"result": 42}  # structured content for the calling code

        snap = await invoke_tool(tools["srv_snapshot"],
                                 ToolCall("c2", "srv_snapshot", json.dumps({"label": "L"})), ctx)
        assert snap.ok
        text, image, audio, markdown, pdf = snap.result.output
        assert text == Text("snapshot L")
        assert isinstance(image, Image) and image.handle is not None
        assert image.handle.kind is ContentKind.IMAGE
        assert (await store.fetch_bytes(image.handle)).startswith(b"\x89PNG")
        assert isinstance(audio, Audio) and audio.handle is not None
        assert isinstance(markdown, Document) and markdown.handle is not None
        assert markdown.name == "summary.md"
        assert await store.fetch_bytes(markdown.handle) == b"# Summary"
        assert isinstance(pdf, Document) and pdf.handle is not None
        assert pdf.handle.mime_type == "application/pdf"
        assert image.handle.id in ctx.handles

        failed = await invoke_tool(tools["srv_fail"], ToolCall("c3", "srv_fail",
                                                               '{"reason": "x"}'), ctx)
        assert failed.result.is_error and isinstance(failed.error, ToolError)
        assert "srv_fail" in failed.result.output[0].text or "fail" in failed.result.output[0].text

        malformed = await invoke_tool(add, ToolCall("c4", "srv_add", "{oops"), ctx)
        assert isinstance(malformed.error, InvalidToolArguments)
