"""HTTP to providers: pooled httpx client, timeouts, retries, typed errors, secrets kept out.

One ``Transport`` per provider instance owns (or borrows) an ``httpx.AsyncClient``: connection
pooling, HTTP/2 for ``https`` when the ``h2`` package is present. Failed attempts are retried with
exponential backoff and full jitter on 408, 409, 429, 5xx and connection errors, honouring
``Retry-After`` (seconds or an HTTP date) and ``retry-after-ms``; other statuses map at once to
``AuthenticationError`` (401/403, or a 400 that says the key is invalid), ``RateLimited``
(429, ``retry_after`` set),
``ContextLengthExceeded`` (a 400/413 whose message says the input is too long) or
``ProviderError`` (provider, status, request id, message). A stream that breaks after its headers
raises ``StreamInterrupted``; timeouts after the last attempt raise ``ProviderTimeout``.

Secrets: credentials live in ``auth_headers`` (never logged, never in ``repr``), and every
message taken from a provider is scrubbed of them before it enters an exception.

``Timeouts.total`` bounds a whole non-streaming call, retries included; for streams it bounds
the wait for the response headers, and ``read`` bounds each gap between chunks.
"""

from __future__ import annotations

import dataclasses
import email.utils
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any

import anyio
import httpx
import msgspec

from plait import (
    AuthenticationError,
    ContextLengthExceeded,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    StreamInterrupted,
)

from ._body import StreamedBody
from ._log import logger

__all__ = ["RetryPolicy", "Timeouts", "Transport", "parse_retry_after"]

RETRY_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-amzn-requestid", "apim-request-id",
                       "x-goog-request-id", "cf-ray")
_CONTEXT_HINTS = ("context_length", "context length", "maximum context", "too many tokens",
                  "prompt is too long", "input is too long", "exceeds the context",
                  "input token count", "reduce the length")
# Gemini answers a bad key with 400 INVALID_ARGUMENT rather than 401: recognise it by its text.
_AUTH_HINTS = ("api key not valid", "api_key_invalid", "invalid api key", "incorrect api key")
_RETRY_ERRORS = (httpx.TransportError,)


@dataclasses.dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds; ``None`` disables one. ``total`` spans every attempt of a call."""

    connect: float | None = 10.0
    read: float | None = 300.0
    write: float | None = 300.0
    total: float | None = None

    def httpx(self) -> httpx.Timeout:
        """The per-operation part as an ``httpx.Timeout``."""
        return httpx.Timeout(connect=self.connect, read=self.read, write=self.write,
                             pool=self.connect)


@dataclasses.dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with full jitter; ``Retry-After`` wins when the server sends one.

    A ``Retry-After`` longer than ``max_retry_after`` is not waited for: ``RateLimited`` is
    raised with it, so the caller (or a step retry policy) can decide.
    """

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 20.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        if retry_after is not None:
            return max(0.0, retry_after)
        return random.uniform(0, min(self.max_delay, self.base_delay * 2 ** (attempt - 1)))


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms``, or ``Retry-After`` as seconds or an HTTP date."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


Body = bytes | StreamedBody | None
BeforeSend = Callable[[httpx.Request], Awaitable[None]]


class Transport:
    """Requests to one provider's base URL, with retries and typed errors (see module doc)."""

    def __init__(self, provider: str, base_url: str, *,
                 auth_headers: Mapping[str, str] | None = None,
                 headers: Mapping[str, str] | None = None,
                 timeouts: Timeouts | None = None, retry: RetryPolicy | None = None,
                 http_client: httpx.AsyncClient | None = None, http2: bool = True,
                 before_send: BeforeSend | None = None) -> None:
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.timeouts = timeouts or Timeouts()
        self.retry = retry or RetryPolicy()
        self.before_send = before_send
        self._auth = dict(auth_headers or {})
        self._secrets = [v.split(" ", 1)[-1] for v in self._auth.values() if v]
        self._headers = dict(headers or {})
        self._owned = http_client is None
        if http_client is None:
            http_client = httpx.AsyncClient(
                http2=http2 and _h2_available() and self.base_url.startswith("https:"),
                timeout=self.timeouts.httpx(),
                limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
            )
        self._client = http_client

    def __repr__(self) -> str:
        return f"Transport(provider={self.provider!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        """Close the HTTP client if this transport created it."""
        if self._owned:
            await self._client.aclose()

    def scrub(self, text: str) -> str:
        """``text`` with every credential replaced by ``***``."""
        for secret in self._secrets:
            if secret:
                text = text.replace(secret, "***")
        return text

    async def request_json(self, method: str, path: str, body: Body = None, *,
                           headers: Mapping[str, str] | None = None,
                           params: Mapping[str, str] | None = None) -> Any:
        """Send one request (retrying as the policy allows) and return the decoded JSON reply.

        Raises ``RateLimited``, ``AuthenticationError``, ``ContextLengthExceeded``,
        ``ProviderTimeout`` or ``ProviderError``.
        """
        total = self.timeouts.total
        try:
            with anyio.fail_after(total) if total is not None else _nullcontext():
                response = await self._send(method, path, body, headers, params, stream=False)
                try:
                    return msgspec.json.decode(response.content)
                except msgspec.DecodeError:
                    raise ProviderError("response is not valid JSON", provider=self.provider,
                                        status=response.status_code,
                                        request_id=_request_id(response.headers)) from None
        except ProviderTimeout:
            raise
        except TimeoutError:
            raise ProviderTimeout(f"no complete response within {total:g}s",
                                  provider=self.provider) from None

    async def stream(self, method: str, path: str, body: Body = None, *,
                     headers: Mapping[str, str] | None = None,
                     params: Mapping[str, str] | None = None) -> AsyncGenerator[bytes, None]:
        """Send one request and yield the response body as it arrives.

        Retries happen only before the first byte; a break afterwards raises
        ``StreamInterrupted``. Other errors as ``request_json``.
        """
        total = self.timeouts.total
        try:
            with anyio.fail_after(total) if total is not None else _nullcontext():
                response = await self._send(method, path, body, headers, params, stream=True)
        except ProviderTimeout:
            raise
        except TimeoutError:
            raise ProviderTimeout(f"no response headers within {total:g}s",
                                  provider=self.provider) from None
        request_id = _request_id(response.headers)
        try:
            async for chunk in response.aiter_bytes():
                yield chunk
        except httpx.TimeoutException:
            raise StreamInterrupted(f"stream stalled longer than the {self.timeouts.read}s "
                                    "read timeout", provider=self.provider,
                                    status=response.status_code, request_id=request_id) from None
        except httpx.TransportError as exc:
            raise StreamInterrupted(f"stream broke: {self.scrub(type(exc).__name__)}",
                                    provider=self.provider, status=response.status_code,
                                    request_id=request_id) from None
        finally:
            await response.aclose()

    async def _send(self, method: str, path: str, body: Body,
                    headers: Mapping[str, str] | None, params: Mapping[str, str] | None, *,
                    stream: bool) -> httpx.Response:
        url = path if path.startswith(("http://", "https://")) else self.base_url + path
        merged = {**self._headers, **(headers or {}), **self._auth}
        if body is not None:
            merged.setdefault("content-type", "application/json")
            if isinstance(body, StreamedBody):
                merged["content-length"] = str(body.content_length)
        attempt = 0
        while True:
            attempt += 1
            request = self._client.build_request(method, url, content=body, headers=merged,
                                                 params=params, timeout=self.timeouts.httpx())
            if self.before_send is not None:
                await self.before_send(request)
            retry_after: float | None = None
            try:
                response = await self._client.send(request, stream=True)
            except _RETRY_ERRORS as exc:
                if attempt > self.retry.max_retries:
                    raise self._transport_error(exc) from None
                status: int | None = None
            else:
                if response.status_code < 400:
                    if not stream:
                        try:
                            await response.aread()
                        except httpx.TransportError as exc:
                            if attempt > self.retry.max_retries:
                                raise self._transport_error(exc) from None
                            await self._backoff(attempt, None, None)
                            continue
                        finally:
                            await response.aclose()
                    return response
                try:
                    await response.aread()
                except httpx.TransportError:
                    pass
                finally:
                    await response.aclose()
                status = response.status_code
                retry_after = parse_retry_after(response.headers)
                if (status not in RETRY_STATUSES or attempt > self.retry.max_retries
                        or (retry_after is not None
                            and retry_after > self.retry.max_retry_after)):
                    raise self._status_error(response, retry_after)
            await self._backoff(attempt, status, retry_after)

    async def _backoff(self, attempt: int, status: int | None,
                       retry_after: float | None) -> None:
        delay = self.retry.delay(attempt, retry_after)
        logger.info("provider_retry", provider=self.provider, status=status, attempt=attempt,
                    delay=round(delay, 3))
        await anyio.sleep(delay)

    def _transport_error(self, exc: httpx.TransportError) -> ProviderError:
        if isinstance(exc, httpx.TimeoutException):
            return ProviderTimeout(f"{type(exc).__name__} after {self.retry.max_retries + 1} "
                                   "attempt(s)", provider=self.provider)
        return ProviderError(f"connection failed after {self.retry.max_retries + 1} attempt(s)"
                             f": {type(exc).__name__}", provider=self.provider)

    def _status_error(self, response: httpx.Response,
                      retry_after: float | None) -> ProviderError:
        status = response.status_code
        request_id = _request_id(response.headers)
        message = self.scrub(_error_message(response))
        if status == 429:
            return RateLimited(message, provider=self.provider, status=status,
                               request_id=request_id, retry_after=retry_after)
        lowered = message.lower()
        if status in (401, 403) or (status == 400 and any(h in lowered for h in _AUTH_HINTS)):
            return AuthenticationError(message, provider=self.provider, status=status,
                                       request_id=request_id)
        if status in (400, 413, 422) and any(h in lowered for h in _CONTEXT_HINTS):
            return ContextLengthExceeded(message, provider=self.provider, status=status,
                                         request_id=request_id)
        return ProviderError(message, provider=self.provider, status=status,
                             request_id=request_id)


def _request_id(headers: httpx.Headers) -> str | None:
    for name in _REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value:
            return str(value)
    return None


def _error_message(response: httpx.Response) -> str:
    """The provider's own error text, from the usual JSON shapes, else the body's start."""
    try:
        data = msgspec.json.decode(response.content)
    except msgspec.DecodeError:
        data = None
    if isinstance(data, list) and data:
        data = data[0]  # Gemini streams errors as a one-item list
    if isinstance(data, dict):
        for candidate in (data.get("error"), data):
            if isinstance(candidate, str) and candidate:
                return candidate[:1000]
            if isinstance(candidate, dict):
                for key in ("message", "Message", "detail", "error"):
                    value = candidate.get(key)
                    if isinstance(value, str) and value:
                        code = candidate.get("code") or candidate.get("type")
                        prefix = f"{code}: " if isinstance(code, str) and code else ""
                        return (prefix + value)[:1000]
    text = response.content[:500].decode("utf-8", "replace").strip()
    return text or response.reason_phrase or "error"


def _h2_available() -> bool:
    try:
        import h2  # noqa: F401
    except ImportError:
        return False
    return True


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
