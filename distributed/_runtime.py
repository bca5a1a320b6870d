"""``DBOSRuntime``: plait runs as durable DBOS workflows shared by many worker processes.

DBOS keeps workflow state and queues in one database (PostgreSQL across machines, SQLite on one
machine). A process that calls ``launch()`` becomes a worker: it takes runs from the queue and
executes them. Any process, worker or not, can ``start`` runs, stream them, ``send`` them events,
``cancel``, ``resume`` and ``list`` them. A worker that dies has its runs re-enqueued by the
others (see ``_liveness``), and they continue from their last checkpointed step. DBOS itself is
a per-process singleton, so at most one runtime per process is launched.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from plait import Event, PlaitError, Workflow

from ._client import Connection, DBOSRun, DBOSRunStarter, RunInfo, describe
from ._codec import dump_event
from ._liveness import Heartbeat
from ._tables import INBOX, create_tables, make_engine
from ._worker import CANCEL, RunHost, workflow_ref

if TYPE_CHECKING:
    import sqlalchemy as sa

__all__ = ["DBOSRuntime"]

_launched = threading.Lock()


class DBOSRuntime:
    """plait on DBOS: ``launch()`` to serve runs, ``start``/``run``/``resume`` to drive them.

    ``database_url`` is DBOS's system database (``postgresql://...`` or ``sqlite:///...``);
    every worker and caller of one deployment uses the same URL, ``app_name`` and ``queue``.
    ``worker_concurrency`` caps the runs one worker executes at once (it is also what spreads a
    queue over several workers). ``polling_interval`` is how often workers poll the queue,
    ``inbox_interval`` how often a running run looks for sent events, ``heartbeat_interval`` how
    often a worker proves it is alive and ``dead_after`` how long silence means death.
    ``workflow_kwargs`` are passed to each workflow class when a worker instantiates it (a
    content store, hooks...).
    """

    def __init__(self, database_url: str, *, app_name: str = "plait", queue: str = "plait",
                 worker_concurrency: int = 8, polling_interval: float = 0.05,
                 inbox_interval: float = 0.25, executor_id: str | None = None,
                 heartbeat_interval: float = 1.0, dead_after: float = 10.0,
                 workflow_kwargs: dict[str, Any] | None = None) -> None:
        if dead_after <= heartbeat_interval:
            raise ValueError("dead_after must be longer than heartbeat_interval")
        self.database_url = database_url
        self.app_name = app_name
        self.queue = queue
        self.worker_concurrency = worker_concurrency
        self.polling_interval = polling_interval
        self.inbox_interval = inbox_interval
        self.executor_id = executor_id or f"plait-{secrets.token_hex(6)}"
        self.heartbeat_interval = heartbeat_interval
        self.dead_after = dead_after
        self.workflow_kwargs = dict(workflow_kwargs or {})
        self._heartbeat: Heartbeat | None = None
        self._launched = False
        self._conn = Connection(database_url, make_engine)

    def __repr__(self) -> str:  # the URL may hold a password
        return f"DBOSRuntime(app_name={self.app_name!r}, queue={self.queue!r}, " \
               f"executor_id={self.executor_id!r})"

    # --- serving --------------------------------------------------------------------------------

    @property
    def recovered_executors(self) -> list[str]:
        """Dead workers whose runs this process re-enqueued."""
        return list(self._heartbeat.recovered) if self._heartbeat is not None else []

    def launch(self) -> None:
        """Become a worker: start DBOS in this process and serve the queue. Import the modules
        that define your workflows first (runs name their workflow class by import path).

        :raises PlaitError: a DBOS runtime is already launched in this process.
        """
        from dbos import DBOS

        from . import _dbos_workflow

        if not _launched.acquire(blocking=False):
            raise PlaitError("a DBOSRuntime is already launched in this process")
        config: dict[str, Any] = {
            "name": self.app_name, "system_database_url": self.database_url,
            "executor_id": self.executor_id, "log_level": "WARNING",
        }
        try:
            DBOS(config=config)  # type: ignore[arg-type]
            DBOS.launch()
            DBOS.register_queue(self.queue, worker_concurrency=self.worker_concurrency,
                                polling_interval_sec=self.polling_interval,
                                on_conflict="always_update")
            # DBOS's own engine: same database, same driver, already configured.
            from dbos._dbos import _get_dbos_instance

            engine: sa.Engine = _get_dbos_instance()._sys_db.engine
            create_tables(engine)
            _dbos_workflow.install(RunHost(engine, poll_interval=self.inbox_interval,
                                           workflow_kwargs=self.workflow_kwargs))
            self._heartbeat = Heartbeat(
                engine, self.executor_id, interval=self.heartbeat_interval,
                dead_after=self.dead_after,
                recover=lambda executor: DBOS._recover_pending_workflows([executor]),
            )
            self._heartbeat.start()
        except BaseException:
            _launched.release()
            raise
        self._launched = True

    def shutdown(self, *, wait: float = 0.0) -> None:
        """Stop serving (runs in flight continue on other workers) and close connections."""
        from dbos import DBOS

        from . import _dbos_workflow

        self._conn.close()
        if not self._launched:
            return
        try:
            if self._heartbeat is not None:
                self._heartbeat.stop()
            DBOS.destroy(workflow_completion_timeout_sec=int(wait))
            _dbos_workflow.install(None)
        finally:
            self._launched = False
            _launched.release()

    async def aclose(self) -> None:
        """Close this caller's database connections (a launched worker: see ``shutdown``)."""
        await self._conn.call(self._conn.close)

    # --- driving runs ---------------------------------------------------------------------------

    def start(self, workflow: type[Workflow[Any, Any]] | Workflow[Any, Any],
              start_event: Event | None = None, /, *, run_id: str | None = None,
              stream: bool = True, **fields: Any) -> DBOSRunStarter:
        """Enqueue a run: ``async with runtime.start(Wf, ...) as run`` or ``await`` it.

        ``fields`` build the start event as in ``Workflow.run``. With ``stream=True`` workers
        record the run's events for ``run.events()``.

        :raises PlaitError: the workflow class is not importable by workers.
        :raises WorkflowDefinitionError: the start event does not fit the workflow.
        """
        cls = workflow if isinstance(workflow, type) else type(workflow)
        ref = workflow_ref(cls)
        ev = cls()._start_event(cls.graph(), start_event, fields)
        type_name, data = dump_event(ev)
        run_id = run_id or secrets.token_hex(12)
        run = DBOSRun(self._conn, run_id, streamed=stream)

        async def enqueue() -> None:
            from dbos import EnqueueOptions

            from ._dbos_workflow import WORKFLOW_NAME

            client = await self._conn.client()
            options = EnqueueOptions(queue_name=self.queue, workflow_name=WORKFLOW_NAME,
                                     workflow_id=run_id)
            await self._conn.call(lambda: client.enqueue(options, ref, type_name, data, stream))

        return DBOSRunStarter(enqueue, run)

    async def start_many(self, workflow: type[Workflow[Any, Any]] | Workflow[Any, Any],
                         start_events: Iterable[Event], *, stream: bool = False
                         ) -> list[DBOSRun]:
        """Enqueue one run per start event in a single transaction (fast bulk submission).

        :raises PlaitError: the workflow class is not importable by workers.
        :raises WorkflowDefinitionError: a start event does not fit the workflow.
        """
        from dbos import EnqueueOptions

        from ._dbos_workflow import WORKFLOW_NAME

        cls = workflow if isinstance(workflow, type) else type(workflow)
        ref, graph, proto = workflow_ref(cls), cls.graph(), cls()
        payloads = [dump_event(proto._start_event(graph, ev, {})) for ev in start_events]
        runs = [DBOSRun(self._conn, secrets.token_hex(12), streamed=stream) for _ in payloads]
        client = await self._conn.client()

        def enqueue() -> None:
            with self._conn.engine().begin() as c:
                for run, (type_name, data) in zip(runs, payloads, strict=True):
                    options = EnqueueOptions(queue_name=self.queue, workflow_name=WORKFLOW_NAME,
                                             workflow_id=run.run_id)
                    client.enqueue_in_transaction(c, options, ref, type_name, data, stream)

        await self._conn.call(enqueue)
        return runs

    async def run(self, workflow: type[Workflow[Any, Any]] | Workflow[Any, Any],
                  start_event: Event | None = None, /, *, run_id: str | None = None,
                  **fields: Any) -> Any:
        """Enqueue a run and wait for its result (see ``start`` and ``DBOSRun.result``)."""
        return await self.start(workflow, start_event, run_id=run_id, stream=False, **fields)

    def get_run(self, run_id: str, *, streamed: bool = True) -> DBOSRun:
        """A handle on an existing run (no database access until it is used)."""
        return DBOSRun(self._conn, run_id, streamed=streamed)

    async def resume(self, run_id: str) -> DBOSRun:
        """Re-enqueue a cancelled (or stuck) run; it continues from its last checkpoint.

        :raises RunNotFound: no such run.
        """
        run = self.get_run(run_id)
        await run.status()  # RunNotFound early
        client = await self._conn.client()

        def drop_cancel() -> None:
            with self._conn.engine().begin() as c:
                c.execute(INBOX.delete().where(INBOX.c.run_id == run_id,
                                               INBOX.c.type == CANCEL))

        await self._conn.call(drop_cancel)
        await self._conn.call(client.resume_workflow, run_id)
        return run

    async def list_runs(self, *, status: str | None = None, limit: int = 50) -> list[RunInfo]:
        """The newest runs first, with DBOS's status and plait's checkpoint summary."""
        client = await self._conn.client()
        from ._dbos_workflow import WORKFLOW_NAME

        def work() -> list[RunInfo]:
            rows = client.list_workflows(name=WORKFLOW_NAME, status=status, limit=limit,
                                         sort_desc=True, load_output=False)
            return [describe(self._conn.engine(), row) for row in rows]

        return await self._conn.call(work)

    async def inspect(self, run_id: str) -> RunInfo:
        """One run's status and checkpoint summary.

        :raises RunNotFound: no such run.
        """
        from plait import RunNotFound

        client = await self._conn.client()

        def work() -> RunInfo:
            rows = client.list_workflows(workflow_ids=[run_id], load_output=False)
            if not rows:
                raise RunNotFound(f"no run {run_id}")
            return describe(self._conn.engine(), rows[0])

        return await self._conn.call(work)
