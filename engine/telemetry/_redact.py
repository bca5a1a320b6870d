"""Removing secrets and raw media from anything that leaves the process as text.

Logs, span attributes and exception messages pass through ``redact``: API keys in the formats
providers issue, bearer tokens, credential headers and query parameters become ``[REDACTED]``,
and long base64 runs (inline media) become a size note. It works on nested mappings and
sequences, so a logged request dict is cleaned wherever the secret sits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["REDACTED", "is_sensitive_key", "redact", "redact_text"]

REDACTED: Final = "[REDACTED]"

# Keys whose value is a secret whatever it looks like (compared lower-case, "-" as "_").
_SENSITIVE_KEYS: Final = frozenset({
    "authorization", "proxy_authorization", "x_api_key", "api_key", "apikey", "x_goog_api_key",
    "api_token", "access_token", "refresh_token", "id_token", "token", "client_secret", "secret",
    "secret_key", "password", "passwd", "cookie", "set_cookie", "private_key",
    "aws_secret_access_key", "aws_session_token", "x_amz_security_token",
    "ocp_apim_subscription_key",
})

# Token shapes providers issue. Each alternative is anchored on a distinctive prefix so ordinary
# words are never touched.
_TOKEN_PATTERNS: Final = (
    r"sk-[A-Za-z0-9_\-]{16,}",  # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-...), DeepSeek...
    r"AIza[0-9A-Za-z_\-]{30,}",  # Google API keys
    r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}",  # AWS access key ids
    r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
    r"xox[abprs]-[A-Za-z0-9\-]{10,}",  # Slack tokens
    r"hf_[A-Za-z0-9]{30,}",  # Hugging Face tokens
    r"gsk_[A-Za-z0-9]{20,}",  # Groq keys
    r"xai-[A-Za-z0-9]{20,}",  # xAI keys
    r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWTs
)

_HEADER_NAMES: Final = (
    r"authorization|proxy-authorization|x-api-key|api[-_]?key|x-goog-api-key|"
    r"ocp-apim-subscription-key|x-amz-security-token|aws_secret_access_key|aws_session_token|"
    r"client_secret|access_token|refresh_token|password"
)
_QUERY_NAMES: Final = (
    r"key|api_key|api-key|apikey|access_token|token|sig|signature|"
    r"x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential"
)

_PATTERN: Final = re.compile(
    # "Bearer abc", "Basic abc": keep the scheme, hide the credential.
    r"(?P<scheme>\b(?:Bearer|Basic|Token)\s+)(?P<cred>[A-Za-z0-9\-._~+/]{8,}=*)"
    # "x-api-key: abc", "'authorization': 'abc'", "api-key=abc" inside text.
    rf"|(?P<hname>\b(?:{_HEADER_NAMES})['\"]?\s*[:=]\s*['\"]?)"
    r"(?!Bearer\b|Basic\b|Token\b|\[REDACTED\])(?P<hval>[^\s'\",;}]+)"
    # "?key=abc&" in URLs.
    rf"|(?P<qname>[?&](?:{_QUERY_NAMES})=)(?P<qval>[^&\s#'\"]+)"
    # data: URLs with inline base64.
    r"|(?P<dataurl>data:[\w.+\-]+/[\w.+\-]+;base64,)(?P<dataval>[A-Za-z0-9+/=_\-]+)"
    rf"|(?P<token>{'|'.join(_TOKEN_PATTERNS)})"
    # Long base64 runs are media (or keys we do not know): never worth keeping in a log line.
    r"|(?P<b64>[A-Za-z0-9+/]{200,}={0,2})",
    re.IGNORECASE,
)


def _replace(match: re.Match[str]) -> str:
    if match.group("cred") is not None:
        return match.group("scheme") + REDACTED
    if match.group("hval") is not None:
        return match.group("hname") + REDACTED
    if match.group("qval") is not None:
        return match.group("qname") + REDACTED
    if match.group("dataval") is not None:
        return f"{match.group('dataurl')}[{len(match.group('dataval'))} base64 chars omitted]"
    if match.group("token") is not None:
        return REDACTED
    return f"[{len(match.group('b64'))} base64 chars omitted]"


def redact_text(text: str) -> str:
    """``text`` with credentials and long base64 runs replaced."""
    return _PATTERN.sub(_replace, text)


def is_sensitive_key(key: object) -> bool:
    """Whether a mapping key names a secret (``Authorization``, ``x-api-key``, ``password``...)."""
    return isinstance(key, str) and key.lower().replace("-", "_") in _SENSITIVE_KEYS


_PLAIN: Final = (int, float, bool, type(None))


def redact(value: Any, *, stringify: bool = False, _depth: int = 0) -> Any:
    """A copy of ``value`` with secrets removed from every string, mapping and sequence in it.

    Values under sensitive keys are replaced whole; bytes become a size note (never content);
    exceptions become their redacted text. Other objects are returned unchanged, or, with
    ``stringify=True`` (what the log processor uses, since renderers would ``repr`` them), as
    their redacted ``repr``.
    """
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, _PLAIN):
        return value
    if _depth > 32:  # a cycle or absurd nesting: do not recurse forever
        return "[nested too deep]"
    if isinstance(value, BaseException):
        return redact_text(f"{type(value).__name__}: {value}")
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(value)} bytes>"
    if isinstance(value, Mapping):
        return {
            k: (REDACTED if is_sensitive_key(k) and v is not None
                else redact(v, stringify=stringify, _depth=_depth + 1))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        items = [redact(v, stringify=stringify, _depth=_depth + 1) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    return redact_text(repr(value)) if stringify else value
