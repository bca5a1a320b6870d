"""Content stores (memory, local files, object storage, provider file APIs), checkpoint stores."""

from __future__ import annotations

from .sqlite_checkpoints import SQLiteCheckpointStore as SQLiteCheckpointStore

__all__: list[str] = ["SQLiteCheckpointStore"]
