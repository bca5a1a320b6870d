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
