"""fal storage: get a short-lived CDN token with the API key, then upload the raw bytes with it.

A fal file is a public URL (``access_url``), so besides fal's own models every provider that
fetches URLs can read it directly: ``resolve`` hands those providers a ``UrlSource``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from plait._content import ContentHandle, MediaSource, ProviderFileSource, UrlSource

from ._gemini_files import parse_time
from ._http import raise_for_status
from ._provider_files import ProviderFileStore, Uploaded
from ._sources import ByteSource

__all__ = ["FalStore"]

# Single-request uploads; fal's multipart protocol (for larger files) is not implemented.
MAX_FILE_BYTES = 100 * 1024 * 1024


class FalStore(ProviderFileStore):
    """Content on fal's CDN; ``Authorization: Key …`` for the token, the token for uploads."""

    provider = "fal"
    env_key = "FAL_KEY"
    default_base_url = "https://rest.fal.ai"
    downloadable = True
    max_file_bytes = MAX_FILE_BYTES

    def __init__(self, *, storage_type: str = "fal-cdn-v3",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.storage_type = storage_type
        self._token: tuple[str, str, float] | None = None  # (authorization, upload base, expiry)

    async def _upload_token(self) -> tuple[str, str]:
        """A cached (authorization header, upload base URL), renewed a minute before expiry."""
        if self._token is not None and self._token[2] - 60 > time.time():
            return self._token[0], self._token[1]
        response = await self.client.post(
            f"{self.base_url}/storage/auth/token", params={"storage_type": self.storage_type},
            headers={"authorization": f"Key {self.api_key()}"}, json={})
        await raise_for_status(response, self.provider, what="storage token")
        data = response.json()
        expires = data.get("expires_at")
        expiry = (float(expires) if isinstance(expires, int | float)
                  else parse_time(expires) or time.time() + 300)
        auth = f"{data.get('token_type', 'Bearer')} {data['token']}"
        self._token = (auth, str(data["base_url"]).rstrip("/"), expiry)
        return auth, self._token[1]

    async def _upload(self, source: ByteSource, chunks: AsyncIterator[bytes], *,
                      mime_type: str, filename: str) -> Uploaded:
        auth, base = await self._upload_token()
        headers = {"authorization": auth, "content-type": mime_type,
                   "x-fal-file-name": filename}
        if source.size is not None:
            headers["content-length"] = str(source.size)
        response = await self.client.post(f"{base}/files/upload", content=chunks,
                                          headers=headers)
        await raise_for_status(response, self.provider, what="file upload")
        url = str(response.json()["access_url"])
        return Uploaded(ProviderFileSource(self.provider, url, mime_type, uri=url),
                        source.size or 0)

    async def _remote_delete(self, source: ProviderFileSource) -> None:
        """fal has no delete call for CDN files; they expire on fal's schedule."""

    async def _describe(self, file_id: str) -> tuple[ProviderFileSource, int | None, str | None]:
        return ProviderFileSource(self.provider, file_id, uri=file_id), None, None

    async def resolve(self, handle: ContentHandle, *,
                      for_provider: str | None = None) -> MediaSource:
        """fal's own file for fal; the public URL for any other provider.

        :raises ContentNotFound: unknown handle.
        """
        source = await super().resolve(handle, for_provider=for_provider)
        if for_provider not in (None, self.provider) and isinstance(source, ProviderFileSource):
            return UrlSource(source.uri or source.file_id, source.mime_type)
        return source

    async def _download(self, source: ProviderFileSource) -> AsyncIterator[bytes]:
        async with self.client.stream("GET", source.uri or source.file_id) as response:
            await raise_for_status(response, self.provider, what="file download")
            async for chunk in response.aiter_bytes():
                yield chunk
