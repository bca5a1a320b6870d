"""Tool schemas as providers receive them.

plait marks content parameters with the vendor keyword ``x-plait-content-ref`` so the resolver
knows which strings are handle ids. Providers have no use for it and some validate schemas
strictly (OpenAI strict mode, Gemini's schema subset), so the wire copy drops every ``x-plait-*``
keyword and tells the model in words instead: the description says which kind of handle id the
field takes. The conversion is cached per schema, since a tool list is resent every turn.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec

__all__ = ["wire_parameters"]

_PREFIX = "x-plait-"
_CONTENT_REF = "x-plait-content-ref"


def wire_parameters(parameters: dict[str, Any]) -> dict[str, Any]:
    """The schema without plait's vendor keywords; content refs described in words.

    The result is shared between calls with an equal schema: treat it as read-only.
    """
    return _cached(msgspec.json.encode(parameters))


@functools.lru_cache(maxsize=512)
def _cached(encoded: bytes) -> dict[str, Any]:
    cleaned = _clean(msgspec.json.decode(encoded))
    assert isinstance(cleaned, dict)
    return cleaned


def _clean(node: Any) -> Any:
    if isinstance(node, list):
        return [_clean(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _clean(value) for key, value in node.items() if not key.startswith(_PREFIX)}
    ref = node.get(_CONTENT_REF)
    if isinstance(ref, dict):
        kind = ref.get("kind", "any")
        hint = (f"Id of a content handle (kind: {kind}) from the handle directory; "
                "pass the id, not the content.")
        existing = out.get("description")
        out["description"] = f"{existing} ({hint})" if isinstance(existing, str) else hint
    return out
