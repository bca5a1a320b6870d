"""Scanning everything a traced run exported (span names, attributes, events, status text and
log lines) for secrets and base64 media."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

LONG_BASE64 = re.compile(r"[A-Za-z0-9+/]{64,}={0,2}")


def exported_text(spans: Iterable[Any], *logs: str) -> str:
    """All text a collector and a log sink would receive, one blob."""
    texts = list(logs)
    for span in spans:
        texts.append(span.name)
        texts.extend(f"{k}={v}" for k, v in (span.attributes or {}).items())
        texts.append(span.status.description or "")
        for event in span.events:
            texts.extend(f"{k}={v}" for k, v in (event.attributes or {}).items())
    return "\n".join(texts)


def assert_clean(blob: str, secrets: Iterable[str], media_base64: Iterable[str] = ()) -> None:
    """No secret (nor a 16-character piece of one) and no base64 run of media size in ``blob``."""
    for secret in secrets:
        assert secret not in blob, "a secret leaked"
        middle = len(secret) // 2
        assert secret[middle - 8:middle + 8] not in blob, "a piece of a secret leaked"
    for b64 in media_base64:
        assert b64[:48] not in blob, "media bytes leaked"
    found = LONG_BASE64.search(blob)
    assert found is None, found
