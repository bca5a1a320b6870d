"""A traced, logged run that handles API keys and images leaves neither in spans nor in logs.

Everything exported is scanned: span names, attributes, events, status descriptions and every
log line, for each key and for any base64 run long enough to be media.
"""

from __future__ import annotations

import base64
import io

import structlog

import plait.logging
from plait import (
    AuthenticationError,
    Image,
    Message,
    ModelReply,
    ModelRequest,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)
from plait.telemetry import ChatCall, OTelHooks, Telemetry, tool_span
from plait.testing import SpanCapture

from ._scan import assert_clean, exported_text

KEYS = {
    "openai": "sk-proj-" + "Q9w8E7r6T5y4U3i2O1p0AaSsDdFfGgHh",
    "anthropic": "sk-ant-api03-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp-Oo9Nn8Mm7",
    "gemini": "AIza" + "SyD9876543210zyxwvutsrqponmlkjihgf",
    "aws": "AKIA" + "Z7Y6X5W4V3U2T1S0",
}
IMAGE = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 16
IMAGE_B64 = base64.b64encode(IMAGE).decode()
def test_keys_and_images_never_reach_spans_or_logs() -> None:
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider,
                    capture_content=True)
    hooks = OTelHooks(tel)
    out = io.StringIO()
    plait.logging.configure(json=True, level="DEBUG", stream=out)
    log = plait.logging.get_logger()
    try:
        run = hooks.run_started("Vision", "run-keys")
        step = hooks.step_started(run, "ask", 1, [])
        request = ModelRequest(
            "gpt-vision", system=f"never print {KEYS['openai']}",
            messages=[Message.user("what is this?", Image.from_bytes(IMAGE, "image/png"),
                                   Image.from_url(f"https://x.example/i.png?key={KEYS['gemini']}"))])
        log.debug("request", headers={"Authorization": f"Bearer {KEYS['openai']}",
                                      "x-api-key": KEYS["anthropic"]},
                  body={"input": [{"type": "input_image",
                                   "image_url": f"data:image/png;base64,{IMAGE_B64}"}]},
                  raw=IMAGE)
        call = ChatCall(tel, request, provider="openai")
        call.finish(error=AuthenticationError(f"key {KEYS['openai']} rejected", provider="openai",
                                              status=401))
        call = ChatCall(tel, request, provider="anthropic")
        call.finish(ModelReply([ToolCall("c1", "save", f'{{"aws": "{KEYS["aws"]}"}}')],
                               Usage(1, 1)))
        with tool_span(tel, ToolCall("c1", "save", f'{{"token": "{KEYS["aws"]}"}}')) as record:
            record(ToolResult("c1", "save", [Text(f"saved with {KEYS['gemini']}"),
                                             Image.from_bytes(IMAGE, "image/png")]))
        try:
            raise RuntimeError(f"upstream said: Authorization: Bearer {KEYS['anthropic']}")
        except RuntimeError as exc:
            log.exception("step failed", error=exc)
            hooks.step_finished(step, exc)
        hooks.run_finished(run, None)
    finally:
        structlog.reset_defaults()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and '"run_id": "run-keys"' in lines[0]
    blob = exported_text(cap.spans(), *lines)
    assert "gen_ai.input.messages" in blob  # capture was on: content is there
    assert "[REDACTED]" in blob
    assert_clean(blob, KEYS.values(), [IMAGE_B64])


def test_the_scan_itself_catches_leaks() -> None:
    import pytest

    key = KEYS["anthropic"]
    with pytest.raises(AssertionError):
        assert_clean(f"header {key}", [key])
    with pytest.raises(AssertionError):
        assert_clean(f"only part {key[10:40]}", [key])
    with pytest.raises(AssertionError):
        assert_clean(f"image {IMAGE_B64[:100]}", [])
    assert_clean("nothing to see [REDACTED]", [key], [IMAGE_B64])
