"""The provider registry: ``"provider:model"`` strings → a wire module and an endpoint.

Each wire module registers the providers it serves when imported::

    register(ProviderSpec(name="anthropic", wire=__name__, base_url="https://…",
                          env_keys=("ANTHROPIC_API_KEY",), auth=header_auth("x-api-key"),
                          path="/v1/messages", headers={"anthropic-version": "2023-06-01"}))

A wire module is any module (or object) with ``CAPABILITIES`` (a ``CapabilityTable``),
``build_request(request, *, caps=None, media=None) -> dict``, ``parse_response(dict) ->
ModelReply`` and ``parse_stream(AsyncIterable[bytes]) -> AsyncIterator[StreamDelta]``
(``WireModule`` below), and optionally ``request_headers(request) -> dict[str, str]`` for
headers that depend on the request (sent by ``Provider`` with each call). Nothing is imported
until a provider is asked for: ``_BUILTIN`` maps each built-in name to the module that registers
it.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from plait import ModelReply, ModelRequest, StreamDelta, UnknownProvider

from ._body import MediaEncoder
from ._capabilities import Capabilities, CapabilityTable

if TYPE_CHECKING:
    from ._client import Provider

__all__ = [
    "ProviderSpec",
    "WireModule",
    "bearer_auth",
    "capabilities_for",
    "get_spec",
    "header_auth",
    "provider_names",
    "register",
    "wire_module",
]


class WireModule(Protocol):
    """What a wire module exposes (module-level names)."""

    CAPABILITIES: CapabilityTable

    def build_request(self, request: ModelRequest, *, caps: Capabilities | None = None,
                      media: MediaEncoder | None = None) -> dict[str, Any]:
        """The wire JSON for ``request`` (media placed and encoded)."""
        ...

    def parse_response(self, data: Any) -> ModelReply:
        """The canonical reply for a decoded non-streaming response."""
        ...

    def parse_stream(self, chunks: AsyncIterable[bytes]) -> AsyncIterator[StreamDelta]:
        """Canonical deltas from the raw response body of a streaming call."""
        ...


def bearer_auth(key: str) -> dict[str, str]:
    """``Authorization: Bearer <key>``."""
    return {"authorization": f"Bearer {key}"}


def header_auth(name: str, scheme: str = "") -> Callable[[str], dict[str, str]]:
    """An auth function putting the key in header ``name`` (``scheme`` prefixed, e.g. "Key")."""
    def auth(key: str) -> dict[str, str]:
        return {name: f"{scheme} {key}" if scheme else key}
    return auth


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ProviderSpec:
    """How to reach one provider: wire module, endpoint, credentials, client class.

    ``path`` / ``stream_path`` may contain ``{model}``; ``stream_params`` are query parameters
    of streaming calls (Gemini's ``alt=sse``). ``capabilities`` overrides the wire module's table
    (the OpenAI-compatible family shares one wire module). ``client`` is a ``Provider`` subclass
    for anything else (Azure deployment URLs, Bedrock signing); ``None`` means ``Provider``.
    """

    name: str
    wire: str
    """Module path of the wire module, or ``"module:attribute"`` for a wire object."""
    base_url: str
    env_keys: tuple[str, ...] = ()
    key_required: bool = True
    auth: Callable[[str], dict[str, str]] = bearer_auth
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    path: str = "/chat/completions"
    stream_path: str | None = None
    stream_params: Mapping[str, str] = dataclasses.field(default_factory=dict)
    capabilities: CapabilityTable | None = None
    client: type[Provider] | None = None
    http2: bool = True
    description: str = ""


_SPECS: dict[str, ProviderSpec] = {}

# Name → the module whose import registers it. Keep in step with the modules.
_BUILTIN: dict[str, str] = {
    "openai": "plait.providers.openai_chat",
    "azure": "plait.providers.openai_compat",
    "mistral": "plait.providers.openai_compat",
    "groq": "plait.providers.openai_compat",
    "deepseek": "plait.providers.openai_compat",
    "together": "plait.providers.openai_compat",
    "fireworks": "plait.providers.openai_compat",
    "perplexity": "plait.providers.openai_compat",
    "xai": "plait.providers.openai_compat",
    "openrouter": "plait.providers.openai_compat",
    "fal": "plait.providers.openai_compat",
    "ollama": "plait.providers.ollama",
    "anthropic": "plait.providers.anthropic",
    "openai-responses": "plait.providers.openai_responses",
    "gemini": "plait.providers.gemini",
    "bedrock": "plait.providers.bedrock",
}


def register(spec: ProviderSpec) -> None:
    """Make ``spec.name`` available to ``connect`` (a later registration replaces it)."""
    _SPECS[spec.name] = spec


def get_spec(name: str) -> ProviderSpec:
    """The spec registered as ``name``, importing its built-in module on first use.

    Raises ``UnknownProvider`` (a ``LookupError``) naming the known providers.
    """
    spec = _SPECS.get(name)
    if spec is None and name in _BUILTIN:
        importlib.import_module(_BUILTIN[name])
        spec = _SPECS.get(name)
    if spec is None:
        raise UnknownProvider(
            f"unknown provider {name!r}; known: {', '.join(provider_names())}")
    return spec


def provider_names() -> list[str]:
    """Every provider name ``connect`` accepts (built-in and registered), sorted."""
    return sorted(set(_BUILTIN) | set(_SPECS))


def wire_module(spec: ProviderSpec) -> WireModule:
    """The wire module of ``spec``: ``"pkg.module"`` or ``"pkg.module:attribute"``."""
    module_name, _, attribute = spec.wire.partition(":")
    module = importlib.import_module(module_name)
    wire: WireModule = getattr(module, attribute) if attribute else module
    return wire


def capabilities_for(provider: str, model: str) -> Capabilities:
    """The capabilities of ``model`` at ``provider``. Raises ``UnknownProvider`` if unknown."""
    spec = get_spec(provider)
    table = spec.capabilities or wire_module(spec).CAPABILITIES
    return table.lookup(model)
