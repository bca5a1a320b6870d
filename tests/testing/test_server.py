"""The loopback emulator server speaks real HTTP: streamed uploads, SSE, cut streams."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from plait.testing import LoopbackServer, Request, Response


def app(request: Request) -> Response:
    if request.path == "/echo-hash":
        digest = hashlib.sha256()
        size = 0
        for chunk in request.iter_body():
            digest.update(chunk)
            size += len(chunk)
        return Response.json({"sha256": digest.hexdigest(), "size": size,
                              "chunked": request.header("transfer-encoding")})
    if request.path == "/sse":
        cut = request.query_value("cut")
        return Response.sse([(None, {"n": i}) for i in range(5)], chunk_delay=0.01,
                            cut_after=int(cut) if cut else None)
    if request.path == "/boom":
        raise RuntimeError("bug in an emulator")
    return Response.json({"error": "not found"}, 404)


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(app) as srv:
        yield srv


async def test_streamed_upload_is_received_whole(server: LoopbackServer) -> None:
    pieces = [bytes([i]) * 70_000 for i in range(20)]

    async def body() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    async with httpx.AsyncClient(base_url=server.url) as client:
        reply = await client.post("/echo-hash", content=body())
    data = reply.json()
    assert data["size"] == sum(map(len, pieces))
    assert data["sha256"] == hashlib.sha256(b"".join(pieces)).hexdigest()
    assert data["chunked"] == "chunked"


async def test_sse_arrives_as_chunks(server: LoopbackServer) -> None:
    async with (
        httpx.AsyncClient(base_url=server.url) as client,
        client.stream("GET", "/sse") as reply,
    ):
        text = "".join([part async for part in reply.aiter_text()])
    assert text.count("data: ") == 5
    assert reply.headers["content-type"] == "text/event-stream"


async def test_cut_stream_raises_on_the_client(server: LoopbackServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        with pytest.raises(httpx.RemoteProtocolError):
            async with client.stream("GET", "/sse", params={"cut": "2"}) as reply:
                async for _ in reply.aiter_bytes():
                    pass


async def test_handler_bug_is_a_500_and_requests_are_logged(server: LoopbackServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as client:
        reply = await client.get("/boom")
        missing = await client.get("/nope")
    assert reply.status_code == 500
    assert "bug in an emulator" in reply.json()["error"]["message"]
    assert missing.status_code == 404
    assert [(m, p) for m, p, _ in server.requests] == [("GET", "/boom"), ("GET", "/nope")]


def test_refuses_non_loopback_hosts() -> None:
    with pytest.raises(ValueError, match="loopback"):
        LoopbackServer(app, host="0.0.0.0")
