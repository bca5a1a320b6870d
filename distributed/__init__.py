"""plait on DBOS: durable runs across worker processes and machines sharing one database.

Needs the ``dbos`` extra (``pip install 'plait[dbos]'``). Importing this package imports DBOS.
"""

from __future__ import annotations

from ._runtime import DBOSRuntime as DBOSRuntime

__all__ = ["DBOSRuntime"]
