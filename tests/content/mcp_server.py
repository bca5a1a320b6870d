"""A tiny MCP server for tests, run as ``python mcp_server.py`` and spoken to over stdio."""

from __future__ import annotations

import base64

try:  # mcp >= 2
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]

from mcp import types

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))

server = Server("plait-test")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def snapshot(label: str) -> list[types.TextContent | types.ImageContent | types.AudioContent
                                 | types.EmbeddedResource]:
    """Return a picture, a sound and two embedded resources."""
    return [
        types.TextContent(type="text", text=f"snapshot {label}"),
        types.ImageContent(type="image", data=base64.b64encode(PNG).decode(),
                           mime_type="image/png"),
        types.AudioContent(type="audio", data=base64.b64encode(b"ID3\x04fake").decode(),
                           mime_type="audio/mpeg"),
        types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
            uri="file:///reports/summary.md", mime_type="text/markdown", text="# Summary")),
        types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(
            uri="file:///reports/data.pdf", mime_type="application/pdf",
            blob=base64.b64encode(b"%PDF-1.4 tiny").decode())),
    ]


@server.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"refused: {reason}")


if __name__ == "__main__":
    server.run("stdio")
