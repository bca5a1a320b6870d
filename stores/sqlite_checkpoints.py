"""SQLite checkpoint store: the embedded default for ``Workflow(checkpoints=...)``.

One row per run holding its newest checkpoint. The stdlib ``sqlite3`` module blocks, so every
call runs in a worker thread (``anyio.to_thread``) and the event loop keeps going. WAL journal
mode lets readers (another process resuming a run) work while a writer commits, and
``synchronous=NORMAL`` in WAL mode survives a killed process (not a power cut), which is the
failure checkpoints are for.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

import anyio.to_thread

from .._errors import CheckpointError, RunNotFound

__all__ = ["SQLiteCheckpointStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS plait_checkpoints (
    run_id   TEXT PRIMARY KEY,
    seq      INTEGER NOT NULL,
    workflow TEXT NOT NULL,
    status   TEXT NOT NULL,
    data     BLOB NOT NULL,
    updated  REAL NOT NULL
)
"""

_UPSERT = """
INSERT INTO plait_checkpoints (run_id, seq, workflow, status, data, updated)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT(run_id) DO UPDATE SET
    seq = excluded.seq, workflow = excluded.workflow, status = excluded.status,
    data = excluded.data, updated = excluded.updated
WHERE excluded.seq > plait_checkpoints.seq
"""


class SQLiteCheckpointStore:
    """Checkpoints in one SQLite file (created on first use)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SQLiteCheckpointStore({str(self.path)!r})"

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                   timeout=30.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            self._conn = conn
        return self._conn

    def _save(self, run_id: str, seq: int, workflow: str, status: str, data: bytes) -> None:
        with self._lock:
            self._connection().execute(_UPSERT, (run_id, seq, workflow, status, data,
                                                 time.time()))

    def _load(self, run_id: str) -> bytes | None:
        with self._lock:
            row = self._connection().execute(
                "SELECT data FROM plait_checkpoints WHERE run_id = ?", (run_id,)
            ).fetchone()
        return bytes(row[0]) if row is not None else None

    def _delete(self, run_id: str) -> None:
        with self._lock:
            self._connection().execute("DELETE FROM plait_checkpoints WHERE run_id = ?",
                                       (run_id,))

    def _runs(self, status: str | None) -> list[str]:
        with self._lock:
            if status is None:
                rows = self._connection().execute(
                    "SELECT run_id FROM plait_checkpoints ORDER BY updated").fetchall()
            else:
                rows = self._connection().execute(
                    "SELECT run_id FROM plait_checkpoints WHERE status = ? ORDER BY updated",
                    (status,)).fetchall()
        return [r[0] for r in rows]

    async def save(self, run_id: str, seq: int, workflow: str, status: str,
                   data: bytes) -> None:
        """Keep ``data`` as the run's checkpoint unless a newer ``seq`` is stored.

        :raises CheckpointError: SQLite failed.
        """
        try:
            await anyio.to_thread.run_sync(self._save, run_id, seq, workflow, status, data)
        except sqlite3.Error as exc:
            raise CheckpointError(f"cannot save checkpoint of run {run_id}: {exc}") from exc

    async def load(self, run_id: str) -> bytes:
        """The newest checkpoint of ``run_id``.

        :raises RunNotFound: none stored. :raises CheckpointError: SQLite failed.
        """
        try:
            data = await anyio.to_thread.run_sync(self._load, run_id)
        except sqlite3.Error as exc:
            raise CheckpointError(f"cannot load checkpoint of run {run_id}: {exc}") from exc
        if data is None:
            raise RunNotFound(f"no checkpoint for run {run_id!r} in {self.path.name}")
        return data

    async def delete(self, run_id: str) -> None:
        """Forget ``run_id``.

        :raises CheckpointError: SQLite failed.
        """
        try:
            await anyio.to_thread.run_sync(self._delete, run_id)
        except sqlite3.Error as exc:
            raise CheckpointError(f"cannot delete run {run_id}: {exc}") from exc

    async def runs(self, status: str | None = None) -> list[str]:
        """Run ids with a checkpoint (optionally only "running", "done" or "failed")."""
        return await anyio.to_thread.run_sync(self._runs, status)

    def close(self) -> None:
        """Close the database connection (reopened on next use)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
