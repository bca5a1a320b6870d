"""HTTP plumbing shared by the provider file stores: error mapping and streamed multipart bodies.

Errors are built from the status and the provider's own error message only: request headers
(where the keys are) never reach an exception or a log line.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterable, AsyncIterator

import httpx

from plait._errors import (
    AuthenticationError,
    ContentError,
    ContentNotFound,
    ProviderError,
    RateLimited,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "MultipartBody",
    "error_for",
    "is_retryable",
    "raise_for_status",
]

DEFAULT_TIMEOUT = httpx.Timeout(connect=15.0, read=300.0, write=300.0, pool=30.0)
_MAX_MESSAGE = 300


def _message(response: httpx.Response) -> str:
    """The provider's error message, trimmed; never the request (which holds the key)."""
    try:
        data = json.loads(response.content or b"null")
    except ValueError:
        text = response.content.decode("utf-8", "replace").strip()
        return text[:_MAX_MESSAGE] or response.reason_phrase
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("type") or err.get("status")
            if msg:
                return str(msg)[:_MAX_MESSAGE]
        elif isinstance(err, str):
            return err[:_MAX_MESSAGE]
        if "detail" in data:
            return str(data["detail"])[:_MAX_MESSAGE]
    return response.reason_phrase or "error"


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def error_for(response: httpx.Response, provider: str, *, what: str = "request") -> Exception:
    """The typed error for a failed response (its body must have been read)."""
    status = response.status_code
    request_id = response.headers.get("x-request-id") or response.headers.get("request-id")
    message = f"{what}: {_message(response)}"
    if status in (401, 403):
        return AuthenticationError(message, provider=provider, status=status,
                                   request_id=request_id)
    if status == 404:
        return ContentNotFound(f"{provider} {what}: not found")
    if status == 429:
        return RateLimited(message, provider=provider, status=status, request_id=request_id,
                           retry_after=_retry_after(response))
    return ProviderError(message, provider=provider, status=status, request_id=request_id)


async def raise_for_status(response: httpx.Response, provider: str, *,
                           what: str = "request") -> None:
    """Raise the typed error for a 4xx/5xx response; do nothing for success.

    :raises AuthenticationError: 401/403.
    :raises ContentNotFound: 404.
    :raises RateLimited: 429.
    :raises ProviderError: any other failure status.
    """
    if response.status_code < 400:
        return
    await response.aread()
    raise error_for(response, provider, what=what)


def is_retryable(exc: BaseException) -> bool:
    """Whether a failed upload step is worth repeating: 5xx, 429, or a broken connection."""
    if isinstance(exc, RateLimited):
        return True
    if isinstance(exc, ProviderError):
        return exc.status is not None and exc.status >= 500
    return isinstance(exc, httpx.TransportError)


def _quote(value: str) -> str:
    """A header parameter value with quotes and line breaks neutralised."""
    return value.replace("\\", "\\\\").replace('"', "%22").replace("\r", " ").replace("\n", " ")


class MultipartBody:
    """A ``multipart/form-data`` body streamed from an async byte source, never joined.

    ``fields`` are small text fields sent before the file; the file part comes last. When the
    file size is known, ``content_length`` is exact so no chunked encoding is needed.
    """

    def __init__(self, fields: dict[str, str], *, file_field: str, filename: str,
                 mime_type: str, chunks: AsyncIterable[bytes], size: int | None) -> None:
        self.boundary = "plait-" + secrets.token_hex(16)
        head = "".join(
            f'--{self.boundary}\r\nContent-Disposition: form-data; name="{_quote(k)}"\r\n\r\n'
            f"{v}\r\n"
            for k, v in fields.items()
        )
        head += (
            f'--{self.boundary}\r\nContent-Disposition: form-data; name="{_quote(file_field)}"; '
            f'filename="{_quote(filename)}"\r\nContent-Type: {mime_type}\r\n\r\n'
        )
        self._head = head.encode()
        self._tail = f"\r\n--{self.boundary}--\r\n".encode()
        self._chunks = chunks
        self._size = size

    @property
    def content_type(self) -> str:
        """The request's ``Content-Type`` header value."""
        return f"multipart/form-data; boundary={self.boundary}"

    @property
    def content_length(self) -> int | None:
        """Exact body length when the file size is known."""
        if self._size is None:
            return None
        return len(self._head) + self._size + len(self._tail)

    def headers(self) -> dict[str, str]:
        """``Content-Type`` and, when known, ``Content-Length``."""
        out = {"content-type": self.content_type}
        if self.content_length is not None:
            out["content-length"] = str(self.content_length)
        return out

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._head
        sent = 0
        async for chunk in self._chunks:
            sent += len(chunk)
            if self._size is not None and sent > self._size:
                raise ContentError(
                    f"content is longer than its declared size ({self._size} bytes)"
                )
            yield chunk
        if self._size is not None and sent != self._size:
            raise ContentError(f"content ended at {sent} of its declared {self._size} bytes")
        yield self._tail
