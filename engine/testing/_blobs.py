"""What the file-API emulators share: bytes kept on disk, a streaming multipart parser, and
failure injection. Keeping bytes on disk keeps an emulator's memory flat under a 1 GiB upload,
so a benchmark measures the client, not the emulator."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Self

from ._server import LoopbackServer, Request, Response

__all__ = [
    "BlobWriter",
    "FileEmulator",
    "Form",
    "InjectedFailure",
    "MultipartError",
    "drain",
    "error",
    "parse_multipart",
]

_READ = 1 << 20
_MAX_HEADERS = 16 * 1024


class InjectedFailure(Exception):
    """Raised inside an emulator to answer a request with the configured 5xx."""


class MultipartError(ValueError):
    """The request body is not well-formed multipart/form-data."""


def _boundary(content_type: str | None) -> bytes:
    match = re.search(r'boundary="?([^";]+)"?', content_type or "")
    if not match or not (content_type or "").startswith("multipart/form-data"):
        raise MultipartError("expected multipart/form-data with a boundary")
    return match.group(1).encode()


def _part_headers(raw: bytes) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in raw.decode("utf-8", "replace").split("\r\n"):
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    disposition = headers.get("content-disposition", "")
    for key in ("name", "filename"):
        found = re.search(rf'\b{key}="([^"]*)"', disposition)
        if found:
            headers[f"_{key}"] = found.group(1)
    return headers


def parse_multipart(chunks: Iterable[bytes], content_type: str | None,
                    open_part: Callable[[dict[str, str]], Callable[[bytes], None]]) -> None:
    """Parse a multipart body as it streams in; each part's bytes go to ``open_part(headers)``.

    Part headers carry ``_name`` and ``_filename`` from ``Content-Disposition``. Memory holds
    one incoming chunk plus a delimiter's length, whatever the part sizes.

    :raises MultipartError: malformed body.
    """
    delimiter = b"--" + _boundary(content_type)
    separator = b"\r\n" + delimiter
    buf = b""
    state = "preamble"
    write: Callable[[bytes], None] = lambda _: None  # noqa: E731
    for chunk in chunks:
        buf += chunk
        while True:
            if state == "preamble":
                at = buf.find(delimiter)
                if at < 0:
                    buf = buf[-len(delimiter):]
                    break
                buf, state = buf[at + len(delimiter):], "after"
            elif state == "after":
                if len(buf) < 2:
                    break
                if buf[:2] == b"--":
                    return
                if buf[:2] != b"\r\n":
                    raise MultipartError("bad delimiter line")
                buf, state = buf[2:], "headers"
            elif state == "headers":
                at = buf.find(b"\r\n\r\n")
                if at < 0:
                    if len(buf) > _MAX_HEADERS:
                        raise MultipartError("part headers too long")
                    break
                write = open_part(_part_headers(buf[:at]))
                buf, state = buf[at + 4:], "body"
            else:  # body
                at = buf.find(separator)
                if at < 0:
                    keep = len(separator) - 1
                    if len(buf) > keep:
                        write(buf[:-keep])
                        buf = buf[-keep:]
                    break
                write(buf[:at])
                buf, state = buf[at + len(separator):], "after"
    raise MultipartError("body ended before the closing delimiter")


def drain(body: Iterator[bytes]) -> None:
    """Read and drop the rest of a body, so the client finishes sending before the answer."""
    for _ in body:
        pass


def error(status: int, message: str, **extra: Any) -> Response:
    """An OpenAI-style error body (Anthropic and Google emulators override the shape)."""
    return Response.json({"error": {"message": message, **extra}}, status)


class FileEmulator:
    """Base of the file-API emulators: blob files in a private temp dir, a loopback server.

    Use as a context manager (``with OpenAIFilesEmulator() as emu: emu.url``). ``fail_upload_at``
    makes the next upload fail with ``fail_status`` after that many bytes of file content have
    arrived (a 5xx mid-upload); it then clears itself. ``clock`` drives expiry.
    """

    api_key: str = "test-key"

    def __init__(self, *, api_key: str | None = None, clock: Callable[[], float] = time.time,
                 fail_upload_at: int | None = None, fail_status: int = 500,
                 storage_dir: str | None = None) -> None:
        if api_key is not None:
            self.api_key = api_key
        self.clock = clock
        self.fail_upload_at = fail_upload_at
        self.fail_status = fail_status
        self._dir = tempfile.mkdtemp(prefix="plait-emu-", dir=storage_dir)
        self._lock = threading.Lock()
        self.files: dict[str, dict[str, Any]] = {}
        self.upload_count = 0
        self.deleted: list[str] = []
        self._server: LoopbackServer | None = None

    # --- lifecycle --------------------------------------------------------------------------

    def route(self, request: Request) -> Response | None:
        """Answer a request this emulator knows, or ``None`` (so emulators can be combined)."""
        raise NotImplementedError

    def __call__(self, request: Request) -> Response:
        return self.route(request) or error(404, f"no route {request.method} {request.path}")

    @property
    def url(self) -> str:
        """The base URL of the running emulator."""
        if self._server is None:
            raise RuntimeError("emulator not started: use it as a context manager")
        return self._server.url

    @property
    def requests(self) -> list[tuple[str, str, dict[str, str]]]:
        """Every request served: ``(method, path, headers)``."""
        return self._server.requests if self._server else []

    def start(self) -> Self:
        """Start serving on loopback."""
        self._server = LoopbackServer(self).start()
        return self

    def stop(self) -> None:
        """Stop serving and remove every stored byte."""
        if self._server is not None:
            self._server.stop()
            self._server = None
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- blobs --------------------------------------------------------------------------------

    def new_id(self, prefix: str) -> str:
        """A fresh provider-style file id."""
        return prefix + secrets.token_hex(12)

    def blob_path(self, file_id: str) -> str:
        """Where a file's bytes live on disk."""
        return os.path.join(self._dir, file_id.replace("/", "_"))

    def blob_writer(self, file_id: str, *, append: bool = False) -> BlobWriter:
        """A writer for a file's bytes that honours ``fail_upload_at``."""
        fail_at = self.fail_upload_at
        return BlobWriter(self.blob_path(file_id), append=append, fail_at=fail_at,
                          on_fail=self._failed)

    def _failed(self) -> None:
        self.fail_upload_at = None

    def receive_form(self, request: Request, file_id: str, *, file_field: str = "file") -> Form:
        """Read a multipart upload, the file part straight to disk.

        :raises InjectedFailure: ``fail_upload_at`` was crossed (the partial blob is removed).
        :raises MultipartError: malformed body, or no file part.
        """
        form = Form()
        writer = self.blob_writer(file_id)

        def open_part(headers: dict[str, str]) -> Callable[[bytes], None]:
            name = headers.get("_name", "")
            if name == file_field and "_filename" in headers:
                form.filename = headers["_filename"]
                form.mime_type = headers.get("content-type")
                return writer.write
            form.fields[name] = ""

            def text(data: bytes) -> None:
                form.fields[name] += data.decode()
            return text

        body = request.iter_body(_READ)
        try:
            parse_multipart(body, request.header("content-type"), open_part)
            if form.filename is None:
                raise MultipartError(f"no {file_field!r} file part")
        except (InjectedFailure, MultipartError):
            writer.close()
            self.remove_blob(file_id)
            drain(body)
            raise
        writer.close()
        drain(body)  # the epilogue and the chunked terminator: the connection is reused
        form.size = writer.written
        return form

    def receive_raw(self, request: Request, file_id: str, *, append: bool = False) -> BlobWriter:
        """Write a raw request body to a blob; returns the (closed) writer for its counts.

        :raises InjectedFailure: ``fail_upload_at`` was crossed (the body is drained; what
            arrived before the failure stays, as a resumable upload keeps it).
        """
        writer = self.blob_writer(file_id, append=append)
        body = request.iter_body(_READ)
        try:
            for chunk in body:
                writer.write(chunk)
        except InjectedFailure:
            drain(body)
            raise
        finally:
            writer.close()
        return writer

    def blob_chunks(self, file_id: str) -> Iterator[bytes]:
        """A file's bytes, streamed from disk."""
        with open(self.blob_path(file_id), "rb") as fh:
            while chunk := fh.read(_READ):
                yield chunk

    def blob_bytes(self, file_id: str) -> bytes:
        """A file's bytes at once (for assertions on small files)."""
        with open(self.blob_path(file_id), "rb") as fh:
            return fh.read()

    def remove_blob(self, file_id: str) -> None:
        """Delete a file's bytes."""
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.blob_path(file_id))


class Form:
    """A received multipart upload: text fields, and the file part's name, type and size."""

    def __init__(self) -> None:
        self.fields: dict[str, str] = {}
        self.filename: str | None = None
        self.mime_type: str | None = None
        self.size = 0


class BlobWriter:
    """Appends to a blob file; raises ``InjectedFailure`` when the failure offset is crossed.

    ``offset`` is the absolute position of the next byte (it starts at the file's size when
    appending), so an injected failure lands at the same place across resumed uploads.
    """

    def __init__(self, path: str, *, append: bool, fail_at: int | None,
                 on_fail: Callable[[], None]) -> None:
        self._fh = open(path, "ab" if append else "wb")  # noqa: SIM115 - closed in close()
        self.offset = self._fh.tell()
        self.written = 0
        self._fail_at = fail_at
        self._on_fail = on_fail

    def write(self, data: bytes) -> None:
        """Store ``data`` (up to the failure offset, then fail)."""
        if self._fail_at is not None and self.offset + len(data) > self._fail_at:
            keep = max(0, self._fail_at - self.offset)
            self._fh.write(data[:keep])
            self.offset += keep
            self.written += keep
            self._fh.flush()
            self._on_fail()
            raise InjectedFailure(f"injected failure at byte {self._fail_at}")
        self._fh.write(data)
        self.offset += len(data)
        self.written += len(data)

    def close(self) -> None:
        """Flush and close the file."""
        self._fh.close()
