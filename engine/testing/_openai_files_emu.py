"""An OpenAI Files API emulator: multipart ``POST /v1/files``, metadata, content, delete, list."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ._blobs import FileEmulator, InjectedFailure, MultipartError, error
from ._server import Request, Response

__all__ = ["OpenAIFilesEmulator"]

_FILE = re.compile(r"^/v1/files/([\w-]+)(/content)?$")


class OpenAIFilesEmulator(FileEmulator):
    """Speaks ``/v1/files`` with ``Authorization: Bearer <api_key>``; ids look like ``file-…``."""

    api_key = "sk-test"

    def _authorized(self, request: Request) -> bool:
        return request.header("authorization") == f"Bearer {self.api_key}"

    def route(self, request: Request) -> Response | None:
        if request.path == "/v1/files" or _FILE.match(request.path):
            if not self._authorized(request):
                return error(401, "Incorrect API key provided", type="invalid_request_error",
                             code="invalid_api_key")
        else:
            return None
        if request.path == "/v1/files":
            if request.method == "POST":
                return self._upload(request)
            with self._lock:
                return Response.json({"object": "list", "data": list(self.files.values())})
        match = _FILE.match(request.path)
        assert match is not None
        file_id, content = match.group(1), match.group(2)
        record = self.files.get(file_id)
        if record is None:
            return error(404, f"No such File object: {file_id}", type="invalid_request_error")
        if request.method == "DELETE":
            with self._lock:
                self.files.pop(file_id, None)
                self.deleted.append(file_id)
            self.remove_blob(file_id)
            return Response.json({"id": file_id, "object": "file", "deleted": True})
        if content:
            return Response(200, self.blob_chunks(file_id),
                            headers={"content-type": "application/octet-stream"})
        return Response.json(record)

    def seed(self, chunks: Iterable[bytes], *, filename: str = "file.bin",
             purpose: str = "user_data") -> str:
        """Store a file as if uploaded by someone else (no HTTP); returns its id."""
        file_id = self.new_id("file-")
        writer = self.blob_writer(file_id)
        try:
            for chunk in chunks:
                writer.write(chunk)
        finally:
            writer.close()
        with self._lock:
            self.files[file_id] = {"id": file_id, "object": "file", "bytes": writer.written,
                                   "created_at": int(self.clock()), "filename": filename,
                                   "purpose": purpose, "status": "processed",
                                   "expires_at": None}
        return file_id

    def _upload(self, request: Request) -> Response:
        file_id = self.new_id("file-")
        try:
            form = self.receive_form(request, file_id)
        except InjectedFailure:
            return error(self.fail_status, "The server had an error processing your request.",
                         type="server_error")
        except MultipartError as exc:
            return error(400, str(exc), type="invalid_request_error")
        if not form.fields.get("purpose"):
            self.remove_blob(file_id)
            return error(400, "'purpose' is required", type="invalid_request_error")
        record = {"id": file_id, "object": "file", "bytes": form.size,
                  "created_at": int(self.clock()), "filename": form.filename,
                  "purpose": form.fields["purpose"], "status": "processed", "expires_at": None}
        with self._lock:
            self.files[file_id] = record
            self.upload_count += 1
        return Response.json(record)
