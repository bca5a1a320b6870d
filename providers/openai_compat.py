"""The OpenAI-compatible family: Chat Completions with per-provider quirks.

All of them take text-only tool messages, so tool-returned media go to one follow-up user message
(``_placement``), exactly as on OpenAI Chat. What differs is captured in a ``ChatDialect`` and a
capability table per provider:

- **Azure OpenAI**: deployment URLs ``{endpoint}/openai/deployments/{deployment}/chat/completions
  ?api-version=…``, key in the ``api-key`` header; ``"azure:<deployment>"``, endpoint from
  ``base_url=`` or ``AZURE_OPENAI_ENDPOINT``, version from ``api_version=`` or
  ``OPENAI_API_VERSION``.
- **Mistral**: a dummy assistant turn (``"OK"``) between the tool messages and the follow-up
  user message ("Unexpected role 'user' after role 'tool'"), PDFs as ``document_url``, tool-call
  ids of exactly 9 alphanumerics (foreign ids are mapped to stable ones), ``random_seed``.
- **Groq** (images only, 5 per request, 4 MB base64 requests), **DeepSeek** (text only, string
  content), **Together**, **Fireworks**, **Perplexity**, **xAI** (JPEG/PNG up to 10 MiB),
  **OpenRouter** (images and PDFs), **fal** (OpenRouter router behind ``Authorization: Key``).

Model families inside a provider vary (a Together or Fireworks model may or may not see
images): pass ``capabilities=`` to ``connect`` to override the table for one model.
"""

from __future__ import annotations

import hashlib
import os
import string
from typing import Any
from urllib.parse import quote

from plait import Message, ModelRequest

from ._capabilities import DOCUMENT, IMAGE, MB, Capabilities, CapabilityTable
from ._client import Provider
from ._registry import ProviderSpec, header_auth, register
from .openai_chat import (
    CAPABILITIES as OPENAI_CAPABILITIES,
)
from .openai_chat import (
    IMAGE_TYPES,
    PDF,
    TEXT_DOCUMENT_TYPES,
    ChatDialect,
    ChatWire,
    max_length_id,
)

__all__ = [
    "AZURE",
    "DEEPSEEK",
    "FAL",
    "FIREWORKS",
    "GROQ",
    "MISTRAL",
    "OPENROUTER",
    "PERPLEXITY",
    "TOGETHER",
    "XAI",
    "AzureProvider",
    "mistral_tool_id",
]

_ALNUM = string.ascii_letters + string.digits


def mistral_tool_id(call_id: str) -> str:
    """Mistral's tool-call id rule: 9 alphanumerics; anything else maps to a stable hash."""
    if len(call_id) == 9 and call_id.isascii() and call_id.isalnum():
        return call_id
    number = int.from_bytes(hashlib.sha256(call_id.encode()).digest()[:8], "big")
    chars = []
    for _ in range(9):
        number, rest = divmod(number, len(_ALNUM))
        chars.append(_ALNUM[rest])
    return "".join(chars)


def _caps(provider: str, **fields: Any) -> Capabilities:
    base: dict[str, Any] = {"user_kinds": frozenset({IMAGE}),
                            "mime_types": {IMAGE: IMAGE_TYPES},
                            "url_kinds": frozenset({IMAGE})}
    base.update(fields)
    return Capabilities(provider=provider, **base)


def _text_only(caps: Capabilities, family: str) -> Capabilities:
    return caps.with_(family=family, user_kinds=frozenset(), url_kinds=frozenset())


# --- Azure OpenAI ---------------------------------------------------------------------------------


class AzureProvider(Provider):
    """Azure OpenAI: the model part of ``"azure:<name>"`` is the deployment name."""

    def __init__(self, spec: ProviderSpec, model: str, *, base_url: str | None = None,
                 api_version: str | None = None, **options: Any) -> None:
        endpoint = base_url or os.environ.get("AZURE_OPENAI_ENDPOINT")
        if not endpoint:
            raise ValueError("Azure OpenAI needs base_url= or AZURE_OPENAI_ENDPOINT "
                             "(https://<resource>.openai.azure.com)")
        self.api_version = api_version or os.environ.get("OPENAI_API_VERSION") or "2024-10-21"
        super().__init__(spec, model, base_url=endpoint, **options)

    def endpoint(self, request: ModelRequest) -> tuple[str, dict[str, str]]:
        """The deployment's chat-completions path and the ``api-version`` parameter."""
        deployment = quote(request.model, safe="")
        return (f"/openai/deployments/{deployment}/chat/completions",
                {"api-version": self.api_version})


AZURE = ChatWire(CapabilityTable("azure", OPENAI_CAPABILITIES.entries,
                                 OPENAI_CAPABILITIES.default.with_(provider="azure",
                                                                   file_provider="azure")),
                 ChatDialect(provider="azure", tool_id=max_length_id(40)))

# --- Mistral --------------------------------------------------------------------------------------

_MISTRAL_CAPS = _caps("mistral", family="vision", user_kinds=frozenset({IMAGE, DOCUMENT}),
                      mime_types={IMAGE: IMAGE_TYPES, DOCUMENT: TEXT_DOCUMENT_TYPES | {PDF}},
                      url_kinds=frozenset({IMAGE, DOCUMENT}))
MISTRAL = ChatWire(
    CapabilityTable("mistral", [
        (pattern, _text_only(_MISTRAL_CAPS, "text"))
        for pattern in ("codestral*", "devstral*", "open-mistral*", "mistral-tiny*",
                        "mistral-embed*")
    ], _MISTRAL_CAPS),
    ChatDialect(provider="mistral", max_tokens_field="max_tokens", stream_usage=False,
                document_part="document_url", bridge=Message.assistant("OK"),
                tool_id=mistral_tool_id, seed_field="random_seed"),
)

# --- the rest of the family -------------------------------------------------------------------

_GROQ_CAPS = _caps("groq", family="vision", max_items_per_kind={IMAGE: 5},
                   max_request_bytes=4 * MB)
GROQ = ChatWire(
    CapabilityTable("groq", [("*llama-4*", _GROQ_CAPS), ("*vision*", _GROQ_CAPS)],
                    _text_only(_GROQ_CAPS, "text")),
    ChatDialect(provider="groq", stream_usage=False, tool_id=max_length_id(40)),
)

_DEEPSEEK_CAPS = _text_only(_caps("deepseek"), "text")
DEEPSEEK = ChatWire(CapabilityTable("deepseek", [], _DEEPSEEK_CAPS),
                    ChatDialect(provider="deepseek", max_tokens_field="max_tokens",
                                string_content=True, tool_id=max_length_id(40)))

TOGETHER = ChatWire(CapabilityTable("together", [], _caps("together")),
                    ChatDialect(provider="together", max_tokens_field="max_tokens",
                                stream_usage=False, tool_id=max_length_id(40)))
FIREWORKS = ChatWire(CapabilityTable("fireworks", [], _caps("fireworks")),
                     ChatDialect(provider="fireworks", max_tokens_field="max_tokens",
                                 stream_usage=False, tool_id=max_length_id(40)))
PERPLEXITY = ChatWire(CapabilityTable("perplexity", [], _caps("perplexity")),
                      ChatDialect(provider="perplexity", max_tokens_field="max_tokens",
                                  stream_usage=False, tool_id=max_length_id(40)))
_XAI_CAPS = _caps("xai", family="grok", mime_types={IMAGE: frozenset({"image/jpeg",
                                                                      "image/png"})},
                  max_item_bytes={IMAGE: 10 * MB})
XAI = ChatWire(CapabilityTable("xai", [], _XAI_CAPS),
               ChatDialect(provider="xai", max_tokens_field="max_tokens", stream_usage=False,
                           tool_id=max_length_id(40)))
_OPENROUTER_CAPS = _caps("openrouter", user_kinds=frozenset({IMAGE, DOCUMENT}),
                         mime_types={IMAGE: IMAGE_TYPES, DOCUMENT: TEXT_DOCUMENT_TYPES | {PDF}})
OPENROUTER = ChatWire(CapabilityTable("openrouter", [], _OPENROUTER_CAPS),
                      ChatDialect(provider="openrouter", max_tokens_field="max_tokens",
                                  stream_usage=False, tool_id=max_length_id(40)))
FAL = ChatWire(CapabilityTable("fal", [], _caps("fal", family="openrouter-router")),
               ChatDialect(provider="fal", max_tokens_field="max_tokens", stream_usage=False,
                           tool_id=max_length_id(40)))


def _register() -> None:
    here = __name__
    specs = [
        ProviderSpec(name="azure", wire=f"{here}:AZURE", base_url="",
                     env_keys=("AZURE_OPENAI_API_KEY",), auth=header_auth("api-key"),
                     client=AzureProvider, description="Azure OpenAI (deployments)"),
        ProviderSpec(name="mistral", wire=f"{here}:MISTRAL", base_url="https://api.mistral.ai/v1",
                     env_keys=("MISTRAL_API_KEY",), description="Mistral"),
        ProviderSpec(name="groq", wire=f"{here}:GROQ", base_url="https://api.groq.com/openai/v1",
                     env_keys=("GROQ_API_KEY",), description="Groq"),
        ProviderSpec(name="deepseek", wire=f"{here}:DEEPSEEK",
                     base_url="https://api.deepseek.com", env_keys=("DEEPSEEK_API_KEY",),
                     description="DeepSeek"),
        ProviderSpec(name="together", wire=f"{here}:TOGETHER",
                     base_url="https://api.together.xyz/v1", env_keys=("TOGETHER_API_KEY",),
                     description="Together AI"),
        ProviderSpec(name="fireworks", wire=f"{here}:FIREWORKS",
                     base_url="https://api.fireworks.ai/inference/v1",
                     env_keys=("FIREWORKS_API_KEY",), description="Fireworks AI"),
        ProviderSpec(name="perplexity", wire=f"{here}:PERPLEXITY",
                     base_url="https://api.perplexity.ai", env_keys=("PERPLEXITY_API_KEY",),
                     description="Perplexity"),
        ProviderSpec(name="xai", wire=f"{here}:XAI", base_url="https://api.x.ai/v1",
                     env_keys=("XAI_API_KEY",), description="xAI"),
        ProviderSpec(name="openrouter", wire=f"{here}:OPENROUTER",
                     base_url="https://openrouter.ai/api/v1", env_keys=("OPENROUTER_API_KEY",),
                     description="OpenRouter"),
        ProviderSpec(name="fal", wire=f"{here}:FAL",
                     base_url="https://fal.run/openrouter/router/openai/v1",
                     env_keys=("FAL_KEY",), auth=header_auth("authorization", "Key"),
                     description="fal (OpenRouter router)"),
    ]
    for spec in specs:
        register(spec)


_register()
