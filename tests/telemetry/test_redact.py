"""Secrets and inline media never survive ``redact``, wherever they sit."""

from __future__ import annotations

import base64

import pytest

from plait.telemetry import redact
from plait.telemetry._redact import REDACTED, redact_text

KEYS = [
    "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4",
    "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
    "sk-ant-api03-" + "abcDEF123456ghiJKL789012mnoPQR345678-stuVWX_yz",
    "AIza" + "SyA1234567890abcdefghijklmnopqrstuv",
    "AKIA" + "IOSFODNN7EXAMPLE",
    "gsk_" + "a1B2c3D4e5F6g7H8i9J0k1L2",
    "xai-" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4",
    "hf_" + "abcdefghijklmnopqrstuvwxyz123456",
]


@pytest.mark.parametrize("key", KEYS)
def test_known_key_formats_are_removed_from_text(key: str) -> None:
    out = redact_text(f"calling with {key} now")
    assert key not in out
    assert REDACTED in out
    assert out.startswith("calling with ") and out.endswith(" now")


def test_headers_and_query_parameters() -> None:
    secret = "s3cr3t-Value_xyz"
    cases = [
        f"Authorization: Bearer {secret}",
        f"authorization={secret}",
        f"x-api-key: {secret}",
        f"'api-key': '{secret}'",
        f'{{"api_key": "{secret}"}}',
        f"https://generativelanguage.example/v1/models?key={secret}&alt=sse",
        f"https://bucket.example/obj?X-Amz-Signature={secret}&X-Amz-Expires=60",
        f"Proxy-Authorization: Basic {secret}",
    ]
    for text in cases:
        out = redact_text(text)
        assert secret not in out, text
        assert REDACTED in out, text
    assert redact_text("https://x.example/a?alt=sse&key=abc") == (
        "https://x.example/a?alt=sse&key=" + REDACTED)


def test_plain_prose_is_untouched() -> None:
    text = "The skeleton key opened 3 doors; tokens=12, Bearer of news, sk-8 is short."
    assert redact_text(text) == text


def test_nested_structures_and_sensitive_keys() -> None:
    b64 = base64.b64encode(bytes(range(256)) * 4).decode()
    event = {
        "request": {
            "headers": {"Authorization": "Bearer abcdefghijklmnop", "X-Api-Key": "whatever",
                        "content-type": "application/json"},
            "body": [{"type": "image", "data": b64}, ("tuple", KEYS[0])],
            "raw": b"\x89PNG\r\n" * 10,
        },
        "password": "hunter2",
        "count": 3,
    }
    out = redact(event)
    text = repr(out)
    assert "abcdefghijklmnop" not in text and "whatever" not in text and "hunter2" not in text
    assert KEYS[0] not in text and b64 not in text and "PNG" not in text
    assert out["request"]["headers"]["content-type"] == "application/json"
    assert out["request"]["raw"] == "<60 bytes>"
    assert out["count"] == 3
    assert out["request"]["body"][0]["data"] == f"[{len(b64)} base64 chars omitted]"
    assert isinstance(out["request"]["body"][1], tuple)
    assert event["password"] == "hunter2"  # a copy: the caller's data is not modified


def test_data_url_keeps_its_type_not_its_bytes() -> None:
    b64 = base64.b64encode(b"x" * 30).decode()
    out = redact_text(f"see data:image/png;base64,{b64} here")
    assert b64 not in out
    assert out == f"see data:image/png;base64,[{len(b64)} base64 chars omitted] here"
