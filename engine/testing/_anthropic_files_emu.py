"""An Anthropic Files API emulator: ``x-api-key``, ``anthropic-version`` and the files beta
header are all required, as on the real API; uploaded files are not downloadable."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from ._blobs import FileEmulator, InjectedFailure, MultipartError
from ._server import Request, Response

__all__ = ["AnthropicFilesEmulator"]

_FILE = re.compile(r"^/v1/files/([\w-]+)(/content)?$")
BETA = "files-api-2025-04-14"


def _error(status: int, kind: str, message: str) -> Response:
    return Response.json({"type": "error", "error": {"type": kind, "message": message}}, status)


class AnthropicFilesEmulator(FileEmulator):
    """Speaks ``/v1/files``; ids look like ``file_011…``."""

    api_key = "sk-ant-test"

    def _check(self, request: Request) -> Response | None:
        if request.header("x-api-key") != self.api_key:
            return _error(401, "authentication_error", "invalid x-api-key")
        if not request.header("anthropic-version"):
            return _error(400, "invalid_request_error", "anthropic-version header is required")
        betas = [b.strip() for b in (request.header("anthropic-beta") or "").split(",")]
        if BETA not in betas:
            return _error(400, "invalid_request_error",
                          f"the Files API requires the anthropic-beta: {BETA} header")
        return None

    def route(self, request: Request) -> Response | None:
        match = _FILE.match(request.path)
        if request.path != "/v1/files" and not match:
            return None
        refused = self._check(request)
        if refused is not None:
            return refused
        if request.path == "/v1/files":
            if request.method == "POST":
                return self._upload(request)
            with self._lock:
                return Response.json({"data": list(self.files.values()), "has_more": False})
        assert match is not None
        file_id, content = match.group(1), match.group(2)
        record = self.files.get(file_id)
        if record is None:
            return _error(404, "not_found_error", f"File not found: {file_id}")
        if request.method == "DELETE":
            with self._lock:
                self.files.pop(file_id, None)
                self.deleted.append(file_id)
            self.remove_blob(file_id)
            return Response.json({"id": file_id, "type": "file_deleted"})
        if content:
            return _error(400, "invalid_request_error",
                          "File is not downloadable (only files created by tools are)")
        return Response.json(record)

    def _upload(self, request: Request) -> Response:
        file_id = self.new_id("file_011")
        try:
            form = self.receive_form(request, file_id)
        except InjectedFailure:
            return _error(self.fail_status, "api_error", "Internal server error")
        except MultipartError as exc:
            return _error(400, "invalid_request_error", str(exc))
        created = datetime.fromtimestamp(self.clock(), UTC).isoformat().replace("+00:00", "Z")
        record = {"id": file_id, "type": "file", "filename": form.filename,
                  "mime_type": form.mime_type or "application/octet-stream",
                  "size_bytes": form.size, "created_at": created, "downloadable": False}
        with self._lock:
            self.files[file_id] = record
            self.upload_count += 1
        return Response.json(record)
