"""The ``plait`` command: ``graph`` prints Mermaid, ``demo`` runs the demo pipeline."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from plait._demo import DEMO_TOPICS, run_demo
from plait.cli import main

HERE = pathlib.Path(__file__).resolve().parent


def test_graph_prints_mermaid(capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(HERE)
    assert main(["graph", "wf_ckpt_fixtures:Killable"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("flowchart TD\n")
    assert 'step_split -->|"list[Item]"| step_work' in out
    assert "step_join[[join]]" in out  # fan-in steps are drawn differently


def test_graph_rejects_bad_targets() -> None:
    with pytest.raises(SystemExit, match="module:WorkflowClass"):
        main(["graph", "nocolon"])
    with pytest.raises(SystemExit, match="cannot load"):
        main(["graph", "plait:NoSuchThing"])
    with pytest.raises(SystemExit, match="not a Workflow"):
        main(["graph", "plait:Event"])


async def test_demo_streams_fans_out_retries_a_timeout_and_returns_the_report() -> None:
    lines: list[str] = []
    report = await run_demo(lines.append)
    assert len(report.lines) == len(DEMO_TOPICS)
    assert "timeouts: drafted on attempt 2" in report.lines
    assert sum("drafted on attempt 1" in line for line in report.lines) == 4
    text = "\n".join(lines)
    assert "fanning out 5 topics" in text and "fan-in collected 5 drafts" in text
    assert "write attempt 1 failed (TimeoutError)" in text


def test_console_script_runs_the_demo_from_any_directory(tmp_path: pathlib.Path) -> None:
    script = shutil.which("plait", path=str(pathlib.Path(sys.executable).parent))
    cmd = [script, "demo", "--engine"] if script else [sys.executable, "-m", "plait.cli", "demo",
                                                          "--engine"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    assert "result:" in proc.stdout and "timeouts: drafted on attempt 2" in proc.stdout
