"""The caller's side of distributed runs: start, stream, answer, cancel, resume, list.

A caller needs no launched DBOS: it talks to the database through a ``DBOSClient`` and plait's
own tables. DBOS's client blocks, so each call runs in a worker thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Generator
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread
import msgspec
import sqlalchemy as sa

from plait import Event, PlaitError, RunNotFound, WorkflowCancelled
from plait._checkpoint import decode_checkpoint

from ._codec import dump_event, load_event
from ._tables import CHECKPOINTS, EVENTS, INBOX
from ._worker import CANCEL

if TYPE_CHECKING:
    from dbos import DBOSClient

__all__ = ["DBOSRun", "DBOSRunStarter", "RunInfo"]

T = TypeVar("T")


class RunInfo(msgspec.Struct, frozen=True):
    """One distributed run as listed by ``DBOSRuntime.list_runs`` / ``plait runs list``.

    ``status`` is DBOS's (ENQUEUED, PENDING, SUCCESS, ERROR, CANCELLED...); ``checkpoint`` is
    plait's last saved status ("running", "done", "failed") or ``None`` before the first step;
    ``pending_steps`` the steps with work saved in that checkpoint.
    """

    run_id: str
    status: str
    workflow: str | None = None
    created_at: float | None = None
    updated_at: float | None = None
    executor_id: str | None = None
    checkpoint: str | None = None
    pending_steps: list[str] = []


class Connection:
    """A lazily opened ``DBOSClient`` plus an engine on the same database."""

    def __init__(self, url: str, make_engine: Callable[[str], sa.Engine]) -> None:
        self._url = url
        self._make_engine = make_engine
        self._client: DBOSClient | None = None
        self._engine: sa.Engine | None = None
        self._lock = anyio.Lock()

    async def client(self) -> DBOSClient:
        async with self._lock:
            if self._client is None:
                from dbos import DBOSClient

                self._client = await anyio.to_thread.run_sync(
                    lambda: DBOSClient(system_database_url=self._url))
            return self._client

    def engine(self) -> sa.Engine:
        if self._engine is None:
            from ._tables import create_tables

            self._engine = self._make_engine(self._url)
            create_tables(self._engine)
        return self._engine

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking database call in a worker thread."""
        return await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)

    def close(self) -> None:
        if self._client is not None:
            self._client.destroy()
            self._client = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


class DBOSRun:
    """A distributed run, from any process: stream it, answer it, cancel it, await it."""

    def __init__(self, conn: Connection, run_id: str, *, streamed: bool) -> None:
        self._conn = conn
        self.run_id = run_id
        self._streamed = streamed
        self._last_event = 0

    def __repr__(self) -> str:
        return f"DBOSRun({self.run_id!r})"

    async def result(self, *, poll_interval: float = 0.05) -> Any:
        """Wait for the run to end and return its result.

        :raises RunFailed: the run failed in a worker (original type and message inside).
        :raises WorkflowCancelled: the run was cancelled.
        """
        client = await self._conn.client()

        def wait() -> Any:
            from dbos import error as dbos_errors

            try:
                return client.retrieve_workflow(self.run_id).get_result(
                    polling_interval_sec=poll_interval)
            except (dbos_errors.DBOSAwaitedWorkflowCancelledError,
                    dbos_errors.DBOSWorkflowCancelledError):
                raise WorkflowCancelled(f"run {self.run_id} was cancelled") from None
            except dbos_errors.DBOSNonExistentWorkflowError:
                raise RunNotFound(f"no run {self.run_id}") from None

        result = await self._conn.call(wait)
        return result

    def events(self, *, poll_interval: float = 0.05) -> AsyncIterator[Event]:
        """The run's stream (steps started and finished, ``write_to_stream`` events, input
        requests) as the worker records it; ends when the run ends. After a worker died, events
        of steps that ran again appear again.

        :raises PlaitError: the run was started without ``stream=True``.
        """
        if not self._streamed:
            raise PlaitError("this run was started without stream=True")
        return self._events(poll_interval)

    def _events(self, poll_interval: float) -> AsyncIterator[Event]:
        return _EventReader(self, poll_interval)

    async def send(self, ev: Event) -> None:
        """Deliver ``ev`` to the run (answers ``ctx.wait_for``); durable once this returns.

        :raises CheckpointError: the event cannot be encoded.
        """
        type_name, data = dump_event(ev)
        await self._conn.call(self._insert_inbox, type_name, data)

    def _insert_inbox(self, type_name: str, data: bytes) -> None:
        with self._conn.engine().begin() as c:
            c.execute(INBOX.insert().values(run_id=self.run_id, type=type_name, data=data))

    async def cancel(self) -> None:
        """Cancel the run: DBOS stops scheduling it and the worker running it stops it now.
        It stays resumable from its last checkpoint (``DBOSRuntime.resume``)."""
        client = await self._conn.client()
        await self._conn.call(self._insert_inbox, CANCEL, b"")
        await self._conn.call(client.cancel_workflow, self.run_id)

    async def status(self) -> str:
        """DBOS's status of the run (ENQUEUED, PENDING, SUCCESS, ERROR, CANCELLED...).

        :raises RunNotFound: no such run.
        """
        client = await self._conn.client()

        def get() -> str:
            from dbos import error as dbos_errors

            try:
                return str(client.retrieve_workflow(self.run_id).get_status().status)
            except dbos_errors.DBOSNonExistentWorkflowError:
                raise RunNotFound(f"no run {self.run_id}") from None

        return await self._conn.call(get)


class _EventReader:
    """Polls a run's recorded events; a plain iterator object, so leaving a loop early needs
    no cleanup (an async generator would have to be closed explicitly)."""

    def __init__(self, run: DBOSRun, poll_interval: float) -> None:
        self._run = run
        self._poll = poll_interval
        self._buffer: list[tuple[int, str, bytes]] = []
        self._ended = False

    def __aiter__(self) -> _EventReader:
        return self

    async def __anext__(self) -> Event:
        run = self._run
        while not self._buffer:
            if self._ended:
                raise StopAsyncIteration
            self._buffer = await run._conn.call(self._fetch, run._last_event)
            if not self._buffer:
                await anyio.sleep(self._poll)
        row_id, type_name, data = self._buffer.pop(0)
        run._last_event = row_id
        if not type_name:
            self._ended = True
            self._buffer.clear()
            raise StopAsyncIteration
        return load_event(type_name, data)

    def _fetch(self, after: int) -> list[tuple[int, str, bytes]]:
        with self._run._conn.engine().connect() as c:
            rows = c.execute(sa.select(EVENTS.c.id, EVENTS.c.type, EVENTS.c.data)
                             .where(EVENTS.c.run_id == self._run.run_id, EVENTS.c.id > after)
                             .order_by(EVENTS.c.id).limit(500))
            return [(r[0], r[1], bytes(r[2])) for r in rows]


class DBOSRunStarter:
    """``async with runtime.start(...) as run`` for a handle, or ``await`` it for the result.

    Leaving the block does not cancel the run: it is durable and goes on in the workers
    (``await run.cancel()`` cancels it).
    """

    def __init__(self, enqueue: Callable[[], Any], run: DBOSRun) -> None:
        self._enqueue = enqueue
        self._run = run
        self._started = False

    def __await__(self) -> Generator[Any, None, Any]:
        return self._result().__await__()

    async def _result(self) -> Any:
        async with self as run:
            return await run.result()

    async def __aenter__(self) -> DBOSRun:
        if not self._started:
            await self._enqueue()
            self._started = True
        return self._run

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        return None


def describe(engine: sa.Engine, status: Any) -> RunInfo:
    """A ``RunInfo`` from DBOS's workflow status plus plait's checkpoint."""
    with engine.connect() as c:
        row = c.execute(sa.select(CHECKPOINTS.c.data)
                        .where(CHECKPOINTS.c.run_id == status.workflow_id)).first()
    checkpoint, pending = None, []
    if row is not None:
        cp = decode_checkpoint(bytes(row[0]))
        checkpoint = cp.status
        pending = sorted({job.step for job in cp.jobs})
    inputs = status.input
    args = inputs.get("args") if isinstance(inputs, dict) else getattr(inputs, "args", None)
    return RunInfo(
        run_id=status.workflow_id, status=str(status.status),
        workflow=str(args[0]) if args else None,
        created_at=status.created_at / 1000 if status.created_at else None,
        updated_at=status.updated_at / 1000 if status.updated_at else None,
        executor_id=status.executor_id, checkpoint=checkpoint, pending_steps=pending,
    )

