"""Gemini Files: the resumable upload protocol, then wait until the file is ``ACTIVE``.

The upload is sent in chunks (each one ``upload`` at its offset, the last ``upload, finalize``),
so memory holds at most one chunk and a failed chunk is resumed from the offset the server says
it received (``X-Goog-Upload-Command: query``) instead of starting over. Files expire 48 h after
upload; the store tracks ``expirationTime`` and uploads again from the kept origin when needed.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import anyio

from plait._content import ProviderFileSource
from plait._errors import ProviderError

from ._http import is_retryable, raise_for_status
from ._provider_files import ProviderFileStore, Uploaded
from ._sources import CHUNK, ByteSource

__all__ = ["GeminiFilesStore"]

MAX_FILE_BYTES = 2 * 1024 * 1024 * 1024
# Chunks must be multiples of 256 KiB (all but the last).
_GRANULE = 256 * 1024


def parse_time(value: str | None) -> float | None:
    """An RFC 3339 timestamp (nanosecond fractions allowed) as Unix seconds."""
    if not value:
        return None
    trimmed = re.sub(r"(\.\d{6})\d+", r"\1", value).replace("Z", "+00:00")
    try:
        return datetime.fromisoformat(trimmed).timestamp()
    except ValueError:
        return None


async def _stream(data: bytes) -> AsyncIterator[bytes]:
    """``data`` as a stream that lets go of it when done.

    httpx keeps a request's content alive as long as the request object, and request/response
    pairs are reference cycles that only the cyclic GC frees: handing it the 8 MiB chunk itself
    would keep several chunks alive at once. A finished generator drops its frame, and the chunk.
    """
    view = memoryview(data)
    for start in range(0, len(view), CHUNK):
        yield bytes(view[start:start + CHUNK])


class GeminiFilesStore(ProviderFileStore):
    """Content kept in the Gemini API's Files service, referenced by ``fileData.fileUri``."""

    provider = "gemini"
    env_key = "GEMINI_API_KEY"
    default_base_url = "https://generativelanguage.googleapis.com"
    max_file_bytes = MAX_FILE_BYTES

    def __init__(self, *, chunk_size: int = 8 * 1024 * 1024, poll_interval: float = 1.0,
                 poll_timeout: float = 600.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.chunk_size = max(_GRANULE, chunk_size // _GRANULE * _GRANULE)
        self.poll_interval = poll_interval
        self.poll_timeout = poll_timeout

    def _auth(self) -> dict[str, str]:
        return {"x-goog-api-key": self.api_key()}

    def _source(self, data: dict[str, Any]) -> ProviderFileSource:
        return ProviderFileSource(self.provider, str(data["name"]), data.get("mimeType"),
                                  uri=data.get("uri"),
                                  expires_at=parse_time(data.get("expirationTime")))

    async def _upload(self, source: ByteSource, chunks: AsyncIterator[bytes], *,
                      mime_type: str, filename: str) -> Uploaded:
        headers = {**self._auth(), "x-goog-upload-protocol": "resumable",
                   "x-goog-upload-command": "start",
                   "x-goog-upload-header-content-type": mime_type}
        if source.size is not None:
            headers["x-goog-upload-header-content-length"] = str(source.size)
        response = await self.client.post(f"{self.base_url}/upload/v1beta/files",
                                          headers=headers,
                                          json={"file": {"display_name": filename}})
        await raise_for_status(response, self.provider, what="upload start")
        url = response.headers.get("x-goog-upload-url")
        if not url:
            raise ProviderError("upload start returned no upload URL", provider=self.provider,
                                status=response.status_code)
        offset = 0
        buffer = bytearray()
        async for chunk in chunks:
            buffer += chunk
            while len(buffer) > self.chunk_size:
                piece = bytes(memoryview(buffer)[:self.chunk_size])
                del buffer[:self.chunk_size]
                offset, _ = await self._send(url, piece, offset, final=False)
                del piece
        offset, data = await self._send(url, bytes(buffer), offset, final=True)
        if data is None:
            raise ProviderError("finalize returned no file", provider=self.provider)
        try:
            file = await self._wait_active(data)
        except BaseException:
            # Cancelled or failed while the file was processing: it exists at Gemini but will
            # never be recorded here, so delete it rather than leave an orphan.
            await self._forget_remote(self._source(data))
            raise
        return Uploaded(self._source(file), offset)

    async def _send(self, url: str, data: bytes, offset: int, *,
                    final: bool) -> tuple[int, dict[str, Any] | None]:
        """Send one chunk at ``offset``; on a retryable failure resume where the server stopped."""
        attempt = 0
        while True:
            command = "upload, finalize" if final else "upload"
            try:
                response = await self.client.post(
                    url, content=_stream(data),
                    headers={**self._auth(), "x-goog-upload-command": command,
                             "x-goog-upload-offset": str(offset),
                             "content-length": str(len(data))})
                await raise_for_status(response, self.provider, what="upload chunk")
                end = offset + len(data)
                return end, (response.json().get("file") if final else None)
            except Exception as exc:
                if attempt >= self.max_retries or not is_retryable(exc):
                    raise
                attempt += 1
                await anyio.sleep(self.retry_backoff * (2 ** (attempt - 1)))
                received, done = await self._query(url)
                if done is not None:
                    return received, done
                skip = received - offset
                if skip < 0 or skip > len(data):
                    raise ProviderError(
                        f"server reports {received} bytes received, outside this chunk",
                        provider=self.provider) from exc
                data, offset = data[skip:], received

    async def _query(self, url: str) -> tuple[int, dict[str, Any] | None]:
        """How many bytes the upload session holds (and the file, if it was finalized)."""
        response = await self.client.post(url, headers={**self._auth(),
                                                        "x-goog-upload-command": "query"})
        await raise_for_status(response, self.provider, what="upload query")
        received = int(response.headers.get("x-goog-upload-size-received", "0"))
        if response.headers.get("x-goog-upload-status") == "final":
            return received, response.json().get("file")
        return received, None

    async def _wait_active(self, file: dict[str, Any]) -> dict[str, Any]:
        """Poll the file until ``ACTIVE`` (video is ``PROCESSING`` for a while after upload).

        :raises ProviderError: the file ended ``FAILED`` or did not become active in time.
        """
        delay = self.poll_interval
        with anyio.move_on_after(self.poll_timeout):
            while True:
                state = file.get("state", "ACTIVE")
                if state == "ACTIVE":
                    return file
                if state == "FAILED":
                    reason = (file.get("error") or {}).get("message", "processing failed")
                    raise ProviderError(f"file {file.get('name')}: {reason}",
                                        provider=self.provider)
                await anyio.sleep(delay)
                delay = min(delay * 1.5, 10.0)
                response = await self.client.get(f"{self.base_url}/v1beta/{file['name']}",
                                                  headers=self._auth())
                await raise_for_status(response, self.provider, what="file status")
                file = response.json()
        raise ProviderError(f"file {file.get('name')} not ACTIVE after {self.poll_timeout:g}s",
                            provider=self.provider)

    async def _remote_delete(self, source: ProviderFileSource) -> None:
        response = await self.client.delete(f"{self.base_url}/v1beta/{source.file_id}",
                                            headers=self._auth())
        await raise_for_status(response, self.provider, what="file delete")

    async def _describe(self, file_id: str) -> tuple[ProviderFileSource, int | None, str | None]:
        name = file_id if file_id.startswith("files/") else f"files/{file_id}"
        response = await self.client.get(f"{self.base_url}/v1beta/{name}", headers=self._auth())
        await raise_for_status(response, self.provider, what="file lookup")
        data = response.json()
        size = data.get("sizeBytes")
        return self._source(data), int(size) if size is not None else None, \
            data.get("displayName")
