"""The provider client the agent uses: ``connect("provider:model")`` → ``Provider``.

A ``Provider`` glues one wire module to one ``Transport``: preflight (limits checked before any
HTTP call), ``build_request`` (media placed and encoded, each item once per conversation through
its ``EncodeCache``), ``encode_body`` (streamed above ``stream_threshold``), the HTTP exchange,
and ``parse_response`` / ``parse_stream``. Subclass it (``ProviderSpec.client``) to change the
endpoint (``endpoint``), headers, or to sign requests (``Transport.before_send``).

    async with connect("openai:gpt-4.1-mini") as llm:
        reply = await llm.complete(ModelRequest(model="", messages=[Message.user("hi")]))
        async for delta in llm.stream(request): ...
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final, Self

import httpx
import msgspec

from plait import (
    AuthenticationError,
    ConfigurationError,
    FinishDelta,
    ModelReply,
    ModelRequest,
    StreamDelta,
    StreamInterrupted,
    telemetry,
)
from plait.telemetry import ChatCall, TracedStream, server_of

from ._body import EncodeCache, MediaEncoder, StreamedBody, encode_body
from ._capabilities import Capabilities
from ._preflight import Uploader, preflight
from ._registry import ProviderSpec, WireModule, get_spec, wire_module
from ._transport import RetryPolicy, Timeouts, Transport

__all__ = ["USE_DEFAULT", "Provider", "connect", "parse_model"]


class _UseDefault:
    """Sentinel: "not given, use the default" (``None`` means "explicitly none")."""

    def __repr__(self) -> str:
        return "USE_DEFAULT"


USE_DEFAULT: Final = _UseDefault()

DEFAULT_STREAM_THRESHOLD = 16 * 1024 * 1024


class Provider:
    """One provider and model behind a pooled HTTP client (see module doc)."""

    def __init__(self, spec: ProviderSpec, model: str, *, api_key: str | None = None,
                 base_url: str | None = None,
                 timeout: float | Timeouts | _UseDefault | None = USE_DEFAULT,
                 max_retries: int = 2, http_client: httpx.AsyncClient | None = None,
                 uploader: Uploader | None = None, encode_cache: EncodeCache | None = None,
                 stream_threshold: int | None = DEFAULT_STREAM_THRESHOLD,
                 headers: Mapping[str, str] | None = None,
                 extra_body: Mapping[str, Any] | None = None,
                 capabilities: Capabilities | None = None) -> None:
        self.spec = spec
        self.name = spec.name
        self.model = model
        self.wire: WireModule = wire_module(spec)
        self._table = spec.capabilities or self.wire.CAPABILITIES
        self._fixed_caps = capabilities
        self.capabilities: Capabilities = capabilities or self._table.lookup(model)
        self.uploader = uploader
        self.media = MediaEncoder(encode_cache if encode_cache is not None else EncodeCache(),
                                  stream_threshold=stream_threshold)
        self.extra_body = dict(extra_body or {})
        key = api_key if api_key is not None else _key_from_env(spec.env_keys)
        if key is None and spec.key_required:
            names = " or ".join(spec.env_keys) or "api_key"
            raise AuthenticationError(f"no API key: pass api_key= or set {names}",
                                      provider=spec.name)
        timeouts = (Timeouts() if isinstance(timeout, _UseDefault)
                    else Timeouts(connect=None, read=None, write=None) if timeout is None
                    else Timeouts(total=timeout) if isinstance(timeout, int | float)
                    else timeout)
        self.transport = Transport(
            spec.name, base_url or spec.base_url,
            auth_headers=spec.auth(key) if key else {},
            headers={**spec.headers, **(headers or {})},
            timeouts=timeouts, retry=RetryPolicy(max_retries=max_retries),
            http_client=http_client, http2=spec.http2,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}:{self.model})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client (if this provider created it)."""
        await self.transport.aclose()

    def capabilities_for(self, model: str) -> Capabilities:
        """Capabilities of another model of this provider."""
        if self._fixed_caps is not None or model == self.model:
            return self.capabilities
        return self._table.lookup(model)

    def endpoint(self, request: ModelRequest) -> tuple[str, dict[str, str]]:
        """Path (or absolute URL) and query parameters for ``request``."""
        template = (self.spec.stream_path or self.spec.path) if request.stream \
            else self.spec.path
        params = dict(self.spec.stream_params) if request.stream else {}
        return template.replace("{model}", request.model), params

    def request_headers(self, request: ModelRequest) -> dict[str, str]:
        """Per-request headers: the wire module's optional ``request_headers(request)``."""
        hook = getattr(self.wire, "request_headers", None)
        return dict(hook(request)) if hook is not None else {}

    async def prepare(self, request: ModelRequest, *, stream: bool
                      ) -> tuple[ModelRequest, bytes | StreamedBody]:
        """Preflight and serialize ``request``; raises ``ContentRejected``."""
        request = msgspec.structs.replace(request, model=request.model or self.model,
                                          stream=stream)
        caps = self.capabilities_for(request.model)
        request = await preflight(request, caps, uploader=self.uploader)
        wire = self.wire.build_request(request, caps=caps, media=self.media)
        if self.extra_body:
            wire.update(self.extra_body)
        return request, encode_body(wire)

    def _chat_call(self, request: ModelRequest, *, stream: bool) -> ChatCall:
        """The ``chat {model}`` span of one call, in the current run's telemetry."""
        address, port = server_of(self.transport.base_url)
        return ChatCall(telemetry.current(), request, provider=self.name,
                        model=request.model or self.model, stream=stream,
                        server_address=address, server_port=port)

    async def complete(self, request: ModelRequest) -> ModelReply:
        """One non-streaming call. Raises ``ContentRejected`` or a ``ProviderError`` subclass."""
        call = self._chat_call(request, stream=False)
        try:
            with call.activate():  # a coroutine: the span is current here, never across a yield
                request, body = await self.prepare(request, stream=False)
                path, params = self.endpoint(request)
                data = await self.transport.request_json("POST", path, body, params=params,
                                                         headers=self.request_headers(request))
                reply = self.wire.parse_response(data)
        except BaseException as exc:
            call.finish(error=exc)
            raise
        call.finish(reply)
        return reply

    def stream(self, request: ModelRequest) -> TracedStream:
        """A streaming call's deltas; ends with ``FinishDelta`` or raises ``StreamInterrupted``.

        The ``chat`` span is current only while a delta is being pulled; close the iterator
        (``aclose()``, or ``async with``) when stopping early so the span ends at once.
        """
        return TracedStream(self._chat_call(request, stream=True), self._stream(request))

    async def _stream(self, request: ModelRequest) -> AsyncIterator[StreamDelta]:
        request, body = await self.prepare(request, stream=True)
        path, params = self.endpoint(request)
        chunks = self.transport.stream("POST", path, body, params=params,
                                       headers=self.request_headers(request))
        finished = False
        deltas = self.wire.parse_stream(chunks)
        try:
            async for delta in deltas:
                if isinstance(delta, FinishDelta):
                    finished = True
                yield delta
        finally:
            close = getattr(deltas, "aclose", None)
            if close is not None:
                await close()
            await chunks.aclose()
        if not finished:
            raise StreamInterrupted("stream ended before its final event", provider=self.name)


def _key_from_env(names: tuple[str, ...]) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def parse_model(model: str) -> tuple[ProviderSpec, str]:
    """Split ``"provider:model"`` into the provider's spec and the model id, checking both.

    Raises ``ConfigurationError`` for a malformed string, ``UnknownProvider`` for an unknown
    provider.
    """
    provider, sep, model_id = model.partition(":")
    if not sep or not provider or not model_id:
        raise ConfigurationError(f"model must look like 'provider:model', got {model!r}")
    return get_spec(provider), model_id


def connect(model: str, *, api_key: str | None = None, base_url: str | None = None,
            timeout: float | Timeouts | _UseDefault | None = USE_DEFAULT, max_retries: int = 2,
            http_client: httpx.AsyncClient | None = None, **options: Any) -> Provider:
    """A ``Provider`` for ``"provider:model"`` (e.g. ``"anthropic:claude-sonnet-4-5"``).

    ``options`` go to the provider class (``uploader``, ``encode_cache``, ``stream_threshold``,
    ``headers``, ``extra_body``, ``capabilities`` (overrides the table for this model), and
    per-provider ones such as Azure's ``api_version``).
    Raises ``UnknownProvider`` for an unknown provider, ``ConfigurationError`` for a malformed
    string (they are also ``LookupError`` and ``ValueError``),
    ``AuthenticationError`` when no key is given or found in the environment.
    """
    spec, model_id = parse_model(model)
    cls = spec.client or Provider
    return cls(spec, model_id, api_key=api_key, base_url=base_url, timeout=timeout,
               max_retries=max_retries, http_client=http_client, **options)
