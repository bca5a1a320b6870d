"""A Gemini Files API emulator: the resumable upload protocol (start, chunked ``upload`` at
offsets, ``upload, finalize``, ``query``), ``PROCESSING`` → ``ACTIVE`` polling, 48 h expiry."""

from __future__ import annotations

import json
import os
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ._blobs import FileEmulator, InjectedFailure
from ._server import Request, Response

__all__ = ["GeminiFilesEmulator"]

_FILE = re.compile(r"^/v1beta/files/([\w-]+)$")
TTL = 48 * 3600


def _error(status: int, code: str, message: str) -> Response:
    return Response.json({"error": {"code": status, "message": message, "status": code}}, status)


def _rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class _Session:
    file_id: str
    display_name: str
    mime_type: str
    declared: int | None
    received: int = 0
    final: dict[str, Any] | None = None


class GeminiFilesEmulator(FileEmulator):
    """Speaks ``/upload/v1beta/files`` and ``/v1beta/files``; key in ``x-goog-api-key``.

    Video files stay ``PROCESSING`` for ``processing_polls`` status reads. Files whose
    ``expirationTime`` has passed (by ``clock``) are gone: 404 on every read.
    """

    api_key = "gemini-test-key"

    def __init__(self, *, processing_polls: int = 2, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.processing_polls = processing_polls
        self.sessions: dict[str, _Session] = {}
        self._polls_left: dict[str, int] = {}
        self._expiry: dict[str, float] = {}

    def _authorized(self, request: Request) -> bool:
        key = request.header("x-goog-api-key") or request.query_value("key")
        return key == self.api_key

    def route(self, request: Request) -> Response | None:
        if request.path == "/upload/v1beta/files":
            upload_id = request.query_value("upload_id")
            if upload_id is not None:
                return self._session(request, upload_id)
            if not self._authorized(request):
                return _error(400, "INVALID_ARGUMENT", "API key not valid.")
            return self._start(request)
        match = _FILE.match(request.path)
        if request.path != "/v1beta/files" and not match:
            return None
        if not self._authorized(request):
            return _error(400, "INVALID_ARGUMENT", "API key not valid.")
        self._expire()
        if match is None:
            with self._lock:
                return Response.json({"files": list(self.files.values())})
        file_id = match.group(1)
        record = self.files.get(file_id)
        if record is None:
            return _error(404, "NOT_FOUND", f"File files/{file_id} not found.")
        if request.method == "DELETE":
            with self._lock:
                self.files.pop(file_id, None)
                self.deleted.append(file_id)
            self.remove_blob(file_id)
            return Response.json({})
        if record["state"] == "PROCESSING":
            left = self._polls_left.get(file_id, 0) - 1
            self._polls_left[file_id] = left
            if left <= 0:
                record["state"] = "ACTIVE"
        return Response.json(record)

    def _expire(self) -> None:
        """Files past their expiration time disappear, as on the real service."""
        now = self.clock()
        with self._lock:
            for file_id in [k for k, t in self._expiry.items() if t <= now and k in self.files]:
                del self.files[file_id]
                self.remove_blob(file_id)

    def _start(self, request: Request) -> Response:
        if (request.header("x-goog-upload-protocol") != "resumable"
                or request.header("x-goog-upload-command") != "start"):
            return _error(400, "INVALID_ARGUMENT", "expected a resumable upload start")
        body = request.json() or {}
        declared = request.header("x-goog-upload-header-content-length")
        upload_id = secrets.token_urlsafe(16)
        file_id = secrets.token_hex(6)
        self.sessions[upload_id] = _Session(
            file_id, str((body.get("file") or {}).get("display_name") or file_id),
            request.header("x-goog-upload-header-content-type") or "application/octet-stream",
            int(declared) if declared else None)
        open(self.blob_path(file_id), "wb").close()
        host = request.header("host")
        url = f"http://{host}/upload/v1beta/files?upload_id={upload_id}&upload_protocol=resumable"
        return Response(200, b"", headers={"x-goog-upload-url": url,
                                           "x-goog-upload-status": "active"})

    def _session(self, request: Request, upload_id: str) -> Response:
        session = self.sessions.get(upload_id)
        if session is None:
            return _error(404, "NOT_FOUND", "unknown upload session")
        command = [c.strip() for c in (request.header("x-goog-upload-command") or "").split(",")]
        status = "final" if session.final else "active"
        if command == ["query"]:
            reply = json.dumps({"file": session.final}).encode() if session.final else b""
            return Response(200, reply, headers={
                "x-goog-upload-status": status,
                "x-goog-upload-size-received": str(session.received),
                "content-type": "application/json"})
        if session.final is not None or "upload" not in command:
            return _error(400, "FAILED_PRECONDITION", "upload session is not active")
        offset = int(request.header("x-goog-upload-offset") or -1)
        if offset != session.received:
            return _error(400, "INVALID_ARGUMENT",
                          f"offset {offset} does not match {session.received} bytes received")
        try:
            self.receive_raw(request, session.file_id, append=True)
        except InjectedFailure:
            return _error(self.fail_status, "UNAVAILABLE", "upload interrupted")
        finally:
            session.received = os.path.getsize(self.blob_path(session.file_id))
        if "finalize" not in command:
            return Response(200, b"", headers={"x-goog-upload-status": "active"})
        if session.declared is not None and session.declared != session.received:
            return _error(400, "INVALID_ARGUMENT", "size does not match the declared length")
        session.final = self._create(session)
        return Response.json({"file": session.final}, headers={"x-goog-upload-status": "final"})

    def _create(self, session: _Session) -> dict[str, Any]:
        now = self.clock()
        file_id = session.file_id
        host = self.url if self._server else ""
        processing = session.mime_type.startswith("video/") and self.processing_polls > 0
        record = {
            "name": f"files/{file_id}", "displayName": session.display_name,
            "mimeType": session.mime_type, "sizeBytes": str(session.received),
            "createTime": _rfc3339(now), "updateTime": _rfc3339(now),
            "expirationTime": _rfc3339(now + TTL), "sha256Hash": "",
            "uri": f"{host}/v1beta/files/{file_id}",
            "state": "PROCESSING" if processing else "ACTIVE", "source": "UPLOADED",
        }
        with self._lock:
            self.files[file_id] = record
            self._expiry[file_id] = now + TTL
            self.upload_count += 1
            if processing:
                self._polls_left[file_id] = self.processing_polls
        return dict(record)
