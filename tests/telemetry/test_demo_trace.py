"""``plait demo --trace`` prints the span tree of the demo it ran."""

from __future__ import annotations

import pytest

from plait.cli import main


def test_engine_demo_trace(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--engine", "--trace"]) == 0
    out = capsys.readouterr().out
    tree = out.split("trace (span, duration):\n", 1)[1].splitlines()
    assert tree[0].startswith("invoke_workflow DemoPipeline  ")
    writes = [line for line in tree if "step write" in line]
    assert len(writes) == 6  # five topics, one retried after its timeout
    assert sum("ERROR plait.StepTimeout" in line for line in writes) == 1
    assert sum("attempt 2" in line for line in writes) == 1
    assert any("step combine" in line and "links 5" in line for line in tree)


def test_agent_demo_trace(capsys: pytest.CaptureFixture[str],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("GEMINI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    assert main(["demo", "--trace"]) == 0
    tree = capsys.readouterr().out.split("trace (span, duration):\n", 1)[1]
    assert tree.startswith("invoke_workflow VideoPipeline  ")
    assert tree.count("invoke_agent AgentWorkflow") == 3
    for name in ("chat gemini-2.5-flash", "chat claude-sonnet-4-5", "execute_tool key_frames",
                 "upload gemini", "rehost gemini"):
        assert name in tree, name


async def test_rehost_and_upload_spans_carry_byte_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    from plait._agent_demo import run_pipeline
    from plait.telemetry import OTelHooks
    from plait.testing import SpanCapture

    for key in ("GEMINI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    cap = SpanCapture()
    lines: list[str] = []
    await run_pipeline(lines.append, hooks=OTelHooks(tracer_provider=cap.tracer_provider))
    upload = cap.span("upload gemini")
    rehost = cap.span("rehost gemini")
    assert upload.parent.span_id == rehost.context.span_id
    size = upload.attributes["plait.content.bytes"]
    assert size > 1_000_000 and upload.attributes["plait.content.mime_type"] == "video/mp4"
    assert rehost.attributes["plait.content.action"] == "uploaded"
    assert rehost.attributes["plait.content.handle_id"] == upload.attributes[
        "plait.content.handle_id"]
    inline = [s for s in cap.spans() if s.name == "rehost anthropic"]
    assert inline and all(s.attributes["plait.content.action"] == "inline" for s in inline)
