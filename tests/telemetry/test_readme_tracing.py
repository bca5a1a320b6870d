"""The README's tracing example is examples/tracing.py, and it runs as shown."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_readme_tracing_example_runs() -> None:
    section = (ROOT / "README.md").read_text().split("## Tracing", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    assert code.group(1).strip() in (ROOT / "examples" / "tracing.py").read_text()
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "tracing.py")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "hi"
    assert lines[1].startswith("invoke_workflow Pipeline  ")
    assert lines[2].startswith("├── step draft  ")
    assert lines[3].startswith("└── step pick  ") and lines[3].endswith("links 2")
    (log,) = [json.loads(line) for line in proc.stderr.splitlines()]
    assert log["api_key"] == "[REDACTED]" and log["step"] == "draft"
    assert len(log["trace_id"]) == 32 and len(log["span_id"]) == 16
