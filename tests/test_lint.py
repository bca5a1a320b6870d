"""ruff passes over the whole tree, so CI catches lint the same way a developer does."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_ruff_is_clean() -> None:
    ruff = shutil.which("ruff", path=str(pathlib.Path(sys.executable).parent)) or "ruff"
    proc = subprocess.run([ruff, "check", "--no-cache", str(ROOT)], capture_output=True,
                          text=True, timeout=300, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
