"""The README's workflow example is the file in examples/, and it runs."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_readme_example_is_examples_quickstart_and_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Workflows", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    example = (ROOT / "examples" / "quickstart.py").read_text()
    assert code.group(1).strip() in example
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "['plait', 'steps', 'typed', 'runs']"
    assert lines[-1] == "['stream', 'this', 'too']"
    assert sum("Word(word=" in line for line in lines) == 3


def test_quick_start_has_exactly_two_one_line_shell_blocks() -> None:
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", quick, re.DOTALL)
    assert len(blocks) == 2 and all(b.count("\n") == 1 for b in blocks)
    assert "plait demo" in blocks[0] and blocks[1].strip() == "scripts/test"
