"""Fixtures for the content tests: both built-in stores, and a tiny HTTP server on 127.0.0.1."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from plait import ContentStore
from plait.stores import LocalFileStore, MemoryStore

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
MP3 = b"ID3\x04\x00" + b"\x00" * 100


@pytest.fixture(params=["memory", "local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ContentStore:
    if request.param == "memory":
        return MemoryStore(chunk_size=1000)
    if request.param == "s3":  # the real SeaweedFS server of tests/realservers.py
        import secrets

        from plait.stores import S3Store

        s3 = request.getfixturevalue("s3_server")
        return S3Store(s3.bucket, prefix=f"contract-{secrets.token_hex(4)}/",
                       endpoint=s3.endpoint, region=s3.region, access_key_id=s3.access_key_id,
                       secret_access_key=s3.secret_access_key, read_chunk_size=1000)
    return LocalFileStore(tmp_path / "store", chunk_size=1000)


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: ClassVar[dict[str, tuple[int, str, bytes]]] = {}

    def do_GET(self) -> None:
        status, mime, body = self.routes.get(self.path.split("?")[0], (404, "text/plain", b"no"))
        self.send_response(status)
        self.send_header("Content-Type", mime)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def http_server() -> Iterator[tuple[str, dict[str, tuple[int, str, bytes]]]]:
    """Base URL and the route table (path -> status, content type, body) of a local server."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _Handler.routes
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
