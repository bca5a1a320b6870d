"""Content stores (memory, local files, object storage, provider file APIs), checkpoint stores."""

from __future__ import annotations

from ._s3 import S3Store as S3Store
from .sqlite_checkpoints import SQLiteCheckpointStore as SQLiteCheckpointStore

__all__: list[str] = ["S3Store", "SQLiteCheckpointStore"]
