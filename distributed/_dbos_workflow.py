"""The one DBOS workflow plait registers: every plait run executes inside ``plait_run``.

DBOS is a per-process singleton and finds workflows by name, so this module-level registration
is the bridge; ``DBOSRuntime.launch`` installs the process's ``RunHost`` before serving.
"""

from __future__ import annotations

from typing import Any

from dbos import DBOS

from plait import PlaitError

from ._worker import RunHost

__all__ = ["WORKFLOW_NAME", "install", "plait_run"]

WORKFLOW_NAME = "plait_run"
_host: list[RunHost] = []


def install(host: RunHost | None) -> None:
    """Make ``host`` execute this process's runs (``None`` on shutdown)."""
    _host.clear()
    if host is not None:
        _host.append(host)


@DBOS.workflow(name=WORKFLOW_NAME)
async def plait_run(ref: str, start_type: str, start_data: bytes, stream: bool) -> Any:
    """Execute one plait run (a fresh start or, after recovery, a resume)."""
    if not _host:
        raise PlaitError("this process has no launched DBOSRuntime")
    run_id = DBOS.workflow_id
    assert run_id is not None
    return await _host[0].execute(run_id, ref, start_type, start_data, stream)
