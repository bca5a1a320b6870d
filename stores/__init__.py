"""Content stores (memory, local files, object storage, provider file APIs) and checkpoint stores."""

from __future__ import annotations

from .local import LocalFileStore as LocalFileStore
from .memory import MemoryStore as MemoryStore
from .sqlite_checkpoints import SQLiteCheckpointStore as SQLiteCheckpointStore

__all__: list[str] = [
    "LocalFileStore",
    "MemoryStore",
    "SQLiteCheckpointStore",
]
