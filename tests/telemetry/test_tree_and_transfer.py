"""The span-tree printer and the rehost/upload spans."""

from __future__ import annotations

from plait.telemetry import OTelHooks, Telemetry, format_span_tree
from plait.testing import SpanCapture


def test_tree_shows_nesting_durations_links_attempts_and_errors() -> None:
    cap = SpanCapture()
    hooks = OTelHooks(tracer_provider=cap.tracer_provider)
    run = hooks.run_started("Demo", "r1")
    a = hooks.step_started(run, "a", 1, [])
    with hooks.telemetry.span("chat m"):
        pass
    hooks.step_finished(a, None)
    b = hooks.step_started(run, "b", 2, [a])
    hooks.step_finished(b, KeyError("x"))
    hooks.run_finished(run, None)
    lines = cap.tree().splitlines()
    assert lines[0].startswith("invoke_workflow Demo  ")
    assert lines[1].startswith("├── step a  ")
    assert lines[2].startswith("│   └── chat m  ")
    assert lines[3].startswith("└── step b  ")
    assert "attempt 2" in lines[3] and "links 1" in lines[3] and "ERROR KeyError" in lines[3]
    assert all(" ms" in line for line in lines)
    assert format_span_tree([]) == ""


def test_rehost_span_carries_byte_counts_and_provider() -> None:
    cap = SpanCapture()
    tel = Telemetry(tracer_provider=cap.tracer_provider)
    with tel.content_transfer("rehost", destination="gemini", handle_id="h_x",
                              mime_type="video/mp4") as span:
        span.set_attribute("plait.content.bytes", 1234)
    done = cap.span("rehost gemini")
    assert dict(done.attributes) == {
        "plait.content.operation": "rehost", "gen_ai.provider.name": "gcp.gemini",
        "plait.content.handle_id": "h_x", "plait.content.mime_type": "video/mp4",
        "plait.content.bytes": 1234}
