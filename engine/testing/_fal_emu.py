"""A fal storage emulator: ``POST /storage/auth/token`` with ``Authorization: Key …`` returns a
short-lived token; ``POST /files/upload`` with that token takes the raw bytes and returns a public
``access_url`` that anyone can ``GET``."""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime
from typing import Any

from ._blobs import FileEmulator, InjectedFailure
from ._server import Request, Response

__all__ = ["FalStorageEmulator"]

_PUBLIC = re.compile(r"^/files/([\w-]+)/([^/]+)$")


def _error(status: int, message: str) -> Response:
    return Response.json({"detail": message}, status)


class FalStorageEmulator(FileEmulator):
    """Serves both the REST token endpoint and the CDN (upload and public reads)."""

    api_key = "fal-test-key"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tokens: set[str] = set()

    def route(self, request: Request) -> Response | None:
        if request.path == "/storage/auth/token" and request.method == "POST":
            if request.header("authorization") != f"Key {self.api_key}":
                return _error(401, "Invalid API key")
            token = secrets.token_urlsafe(24)
            self.tokens.add(token)
            expires = datetime.fromtimestamp(self.clock() + 3600, UTC).isoformat()
            return Response.json({"token": token, "token_type": "Bearer",
                                  "base_url": f"http://{request.header('host')}",
                                  "expires_at": expires})
        if request.path == "/files/upload" and request.method == "POST":
            return self._upload(request)
        match = _PUBLIC.match(request.path)
        if match and request.method == "GET":
            record = self.files.get(match.group(1))
            if record is None:
                return _error(404, "File not found")
            return Response(200, self.blob_chunks(match.group(1)),
                            headers={"content-type": record["content_type"]})
        return None

    def _upload(self, request: Request) -> Response:
        auth = request.header("authorization") or ""
        if not auth.startswith("Bearer ") or auth[7:] not in self.tokens:
            return _error(401, "Invalid or expired storage token")
        file_id = self.new_id("")
        name = re.sub(r"[^\w.-]", "_", request.header("x-fal-file-name") or "file")
        try:
            writer = self.receive_raw(request, file_id)
        except InjectedFailure:
            self.remove_blob(file_id)
            return _error(self.fail_status, "Upload failed")
        url = f"http://{request.header('host')}/files/{file_id}/{name}"
        with self._lock:
            self.files[file_id] = {"access_url": url, "size": writer.written,
                                   "content_type": request.header("content-type")
                                   or "application/octet-stream"}
            self.upload_count += 1
        return Response.json({"access_url": url})
