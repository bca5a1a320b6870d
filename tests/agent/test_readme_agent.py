"""The README's agent example runs and prints what the README says it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_agent_example_runs() -> None:
    section = README.read_text().split("## Agents", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    proc = subprocess.run([sys.executable, "-c", code.group(1)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["tool add -> 5", "text 2 + 3 = 5",
                                        "2 + 3 = 5 | turns: 2 | input tokens: 32"]
