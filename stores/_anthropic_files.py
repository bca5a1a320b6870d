"""Anthropic Files (``POST /v1/files``, multipart field ``file``).

The Files API is behind the ``files-api-2025-04-14`` beta header; it is always sent (WIRE.md: the
SDK does not add it, and sending it is harmless if the API went GA). Uploaded files are not
downloadable, so the store reads bytes back from the kept origin.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from plait._content import ProviderFileSource

from ._http import MultipartBody, raise_for_status
from ._provider_files import ProviderFileStore, Uploaded
from ._sources import ByteSource

__all__ = ["FILES_BETA", "AnthropicFilesStore"]

FILES_BETA = "files-api-2025-04-14"
API_VERSION = "2023-06-01"
MAX_FILE_BYTES = 500 * 1024 * 1024


class AnthropicFilesStore(ProviderFileStore):
    """Content kept in Anthropic's Files API, referenced as ``{"type": "file", "file_id": …}``."""

    provider = "anthropic"
    env_key = "ANTHROPIC_API_KEY"
    default_base_url = "https://api.anthropic.com"
    max_file_bytes = MAX_FILE_BYTES

    def _headers(self) -> dict[str, str]:
        return {"x-api-key": self.api_key(), "anthropic-version": API_VERSION,
                "anthropic-beta": FILES_BETA}

    def _source(self, data: dict[str, Any]) -> ProviderFileSource:
        return ProviderFileSource(self.provider, str(data["id"]), data.get("mime_type"))

    async def _upload(self, source: ByteSource, chunks: AsyncIterator[bytes], *,
                      mime_type: str, filename: str) -> Uploaded:
        body = MultipartBody({}, file_field="file", filename=filename, mime_type=mime_type,
                             chunks=chunks, size=source.size)
        response = await self.client.post(f"{self.base_url}/v1/files", content=body,
                                          headers={**self._headers(), **body.headers()})
        await raise_for_status(response, self.provider, what="file upload")
        data = response.json()
        return Uploaded(self._source(data), int(data.get("size_bytes", 0)))

    async def _remote_delete(self, source: ProviderFileSource) -> None:
        response = await self.client.delete(f"{self.base_url}/v1/files/{source.file_id}",
                                            headers=self._headers())
        await raise_for_status(response, self.provider, what="file delete")

    async def _describe(self, file_id: str) -> tuple[ProviderFileSource, int | None, str | None]:
        response = await self.client.get(f"{self.base_url}/v1/files/{file_id}",
                                         headers=self._headers())
        await raise_for_status(response, self.provider, what="file lookup")
        data = response.json()
        return self._source(data), data.get("size_bytes"), data.get("filename")
