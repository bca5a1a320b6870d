"""plait's own tables, kept beside DBOS's in the same database.

DBOS records workflows (runs) and queues; plait adds what DBOS has no notion of: the newest
checkpoint of each run, events sent to runs and not yet taken in, the runs' streamed events, and
worker heartbeats. SQLAlchemy Core, so PostgreSQL and SQLite share one definition.
"""

from __future__ import annotations

import sqlalchemy as sa

__all__ = ["CHECKPOINTS", "EVENTS", "INBOX", "WORKERS", "create_tables", "make_engine"]

metadata = sa.MetaData()

CHECKPOINTS = sa.Table(
    "plait_checkpoints", metadata,
    sa.Column("run_id", sa.Text, primary_key=True),
    sa.Column("seq", sa.BigInteger, nullable=False),
    sa.Column("workflow", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=False),
    sa.Column("updated", sa.Float, nullable=False),
)

INBOX = sa.Table(
    "plait_inbox", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Text, nullable=False, index=True),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=False),
)

EVENTS = sa.Table(
    "plait_events", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Text, nullable=False, index=True),
    sa.Column("type", sa.Text, nullable=False),  # "" marks the end of the stream
    sa.Column("data", sa.LargeBinary, nullable=False),
)

WORKERS = sa.Table(
    "plait_workers", metadata,
    sa.Column("executor_id", sa.Text, primary_key=True),
    sa.Column("last_seen", sa.Float, nullable=False),
)


def make_engine(url: str) -> sa.Engine:
    """An engine for a DBOS system-database URL (``postgresql://`` means psycopg 3 here)."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    return sa.create_engine(url, pool_pre_ping=True)


def create_tables(engine: sa.Engine) -> None:
    """Create plait's tables if they are missing (safe to race from several processes)."""
    try:
        metadata.create_all(engine, checkfirst=True)
    except sa.exc.IntegrityError:
        metadata.create_all(engine, checkfirst=True)  # another process created them first
