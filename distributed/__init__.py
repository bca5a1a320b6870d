"""plait on DBOS: durable runs across worker processes and machines sharing one database.

Needs the ``dbos`` extra (``pip install 'plait[dbos]'``). Importing this package imports
SQLAlchemy; DBOS itself is imported when a runtime is used.
"""

from __future__ import annotations

from ._client import DBOSRun as DBOSRun
from ._client import DBOSRunStarter as DBOSRunStarter
from ._client import RunInfo as RunInfo
from ._runtime import DBOSRuntime as DBOSRuntime

__all__ = ["DBOSRun", "DBOSRunStarter", "DBOSRuntime", "RunInfo"]
