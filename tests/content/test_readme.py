"""The README's "Content and tools" example runs and prints what it promises."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_content_example_runs() -> None:
    section = README.read_text().split("## Content and tools", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    proc = subprocess.run([sys.executable, "-c", code.group(1)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == '{"type":"string","x-plait-content-ref":{"kind":"image"}}'.replace(
        ":", ": ").replace(",", ", ")
    assert "cat.png" in proc.stdout and "image/png" in proc.stdout
    assert "{'bytes_in': 72}" in proc.stdout
    assert lines[-1] == "True UnknownHandle"
