"""mypy --strict passes over the whole package (the style guide's promise of typed everywhere)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_mypy_strict_passes() -> None:
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "typecheck")],
        check=False,
        capture_output=True,
        text=True,
        env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
