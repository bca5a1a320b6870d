"""OpenAI Files (``POST /v1/files``): a multipart upload with a ``purpose``; files can be
downloaded again from ``/v1/files/{id}/content``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from plait._content import ProviderFileSource

from ._http import MultipartBody, raise_for_status
from ._provider_files import ProviderFileStore, Uploaded
from ._sources import ByteSource

__all__ = ["OpenAIFilesStore"]

# The Files API takes files up to 512 MB each.
MAX_FILE_BYTES = 512 * 1024 * 1024


class OpenAIFilesStore(ProviderFileStore):
    """Content kept in OpenAI's Files API (``purpose`` defaults to ``user_data``: model inputs)."""

    provider = "openai"
    env_key = "OPENAI_API_KEY"
    default_base_url = "https://api.openai.com"
    downloadable = True
    max_file_bytes = MAX_FILE_BYTES

    def __init__(self, *, purpose: str = "user_data", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.purpose = purpose

    def _auth(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.api_key()}"}

    def _source(self, data: dict[str, object], mime_type: str | None) -> ProviderFileSource:
        expires = data.get("expires_at")
        return ProviderFileSource(self.provider, str(data["id"]), mime_type,
                                  expires_at=float(expires) if isinstance(expires, int | float)
                                  else None)

    async def _upload(self, source: ByteSource, chunks: AsyncIterator[bytes], *,
                      mime_type: str, filename: str) -> Uploaded:
        body = MultipartBody({"purpose": self.purpose}, file_field="file", filename=filename,
                             mime_type=mime_type, chunks=chunks, size=source.size)
        response = await self.client.post(f"{self.base_url}/v1/files", content=body,
                                          headers={**self._auth(), **body.headers()})
        await raise_for_status(response, self.provider, what="file upload")
        data = response.json()
        return Uploaded(self._source(data, mime_type), int(data.get("bytes", 0)))

    async def _remote_delete(self, source: ProviderFileSource) -> None:
        response = await self.client.delete(f"{self.base_url}/v1/files/{source.file_id}",
                                            headers=self._auth())
        await raise_for_status(response, self.provider, what="file delete")

    async def _describe(self, file_id: str) -> tuple[ProviderFileSource, int | None, str | None]:
        response = await self.client.get(f"{self.base_url}/v1/files/{file_id}",
                                         headers=self._auth())
        await raise_for_status(response, self.provider, what="file lookup")
        data = response.json()
        return self._source(data, None), data.get("bytes"), data.get("filename")

    async def _download(self, source: ProviderFileSource) -> AsyncIterator[bytes]:
        url = f"{self.base_url}/v1/files/{source.file_id}/content"
        async with self.client.stream("GET", url, headers=self._auth()) as response:
            await raise_for_status(response, self.provider, what="file download")
            async for chunk in response.aiter_bytes():
                yield chunk
