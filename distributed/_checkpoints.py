"""Checkpoints of distributed runs, in the deployment's database.

A checkpoint store in the sense of ``plait.CheckpointStore`` (newest ``seq`` wins), with one
addition: events taken from a run's inbox are deleted in the same transaction as the first
checkpoint that contains them, so an event sent to a run is applied exactly once even if the
worker dies in between.
"""

from __future__ import annotations

import time
from typing import Any

import anyio.to_thread
import sqlalchemy as sa

from plait import CheckpointError, RunNotFound

from ._tables import CHECKPOINTS, INBOX

__all__ = ["SQLCheckpointStore"]


def _dialect_insert(dialect: str) -> Any:
    """The dialect's INSERT with ``ON CONFLICT`` support."""
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert
    if dialect == "sqlite":
        from sqlalchemy.dialects import sqlite

        return sqlite.insert
    raise CheckpointError(f"checkpoints need PostgreSQL or SQLite, not {dialect}")


class SQLCheckpointStore:
    """``plait.CheckpointStore`` over SQLAlchemy (PostgreSQL or SQLite)."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine
        self.taken: list[int] = []  # inbox rows applied to the run, not yet in a saved checkpoint

    async def save(self, run_id: str, seq: int, workflow: str, status: str,
                   data: bytes) -> None:
        """Keep ``data`` unless a newer checkpoint is stored; drop inbox rows it now holds.

        :raises CheckpointError: the write failed.
        """
        # Taken before the first await: the runtime snapshots the run right before calling
        # save, so every inbox event applied so far is inside ``data``.
        taken, self.taken = self.taken, []
        try:
            await anyio.to_thread.run_sync(self._save, run_id, seq, workflow, status, data,
                                           taken)
        except sa.exc.SQLAlchemyError as exc:
            self.taken = taken + self.taken
            raise CheckpointError(f"saving checkpoint of run {run_id} failed: "
                                  f"{type(exc).__name__}") from exc

    def _save(self, run_id: str, seq: int, workflow: str, status: str, data: bytes,
              taken: list[int]) -> None:
        values = {"run_id": run_id, "seq": seq, "workflow": workflow, "status": status,
                  "data": data, "updated": time.time()}
        with self._engine.begin() as conn:
            # One upsert that keeps the newest seq: saves of concurrent steps may arrive in any
            # order.
            insert = _dialect_insert(conn.dialect.name)(CHECKPOINTS).values(**values)
            conn.execute(insert.on_conflict_do_update(
                index_elements=[CHECKPOINTS.c.run_id],
                set_={k: insert.excluded[k] for k in values if k != "run_id"},
                where=CHECKPOINTS.c.seq < insert.excluded.seq,
            ))
            if taken:
                conn.execute(INBOX.delete().where(INBOX.c.id.in_(taken)))

    async def load(self, run_id: str) -> bytes:
        """The newest checkpoint of ``run_id``.

        :raises RunNotFound: none is stored.
        """
        data = await anyio.to_thread.run_sync(self.load_sync, run_id)
        if data is None:
            raise RunNotFound(f"no checkpoint for run {run_id}")
        return data

    def load_sync(self, run_id: str) -> bytes | None:
        """Blocking ``load`` that returns ``None`` for an unknown run."""
        with self._engine.connect() as conn:
            row = conn.execute(sa.select(CHECKPOINTS.c.data)
                               .where(CHECKPOINTS.c.run_id == run_id)).first()
        return bytes(row[0]) if row is not None else None

    async def delete(self, run_id: str) -> None:
        """Forget ``run_id``'s checkpoint."""
        def work() -> None:
            with self._engine.begin() as conn:
                conn.execute(CHECKPOINTS.delete().where(CHECKPOINTS.c.run_id == run_id))

        await anyio.to_thread.run_sync(work)
