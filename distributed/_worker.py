"""The worker side: one DBOS workflow, ``plait_run``, that hosts any plait run.

A run is a DBOS workflow (so DBOS queues, recovers and cancels it); inside it the ordinary plait
runtime executes the steps and saves a checkpoint after each one to the shared database. When
DBOS recovers a run on another worker, ``plait_run`` finds that checkpoint and resumes: steps
that completed do not run again, and a step that was in flight runs again with a higher
``ctx.attempt``. Plait steps are not replayed through DBOS's ordinal step log because plait
runs steps concurrently (fan-out, ``workers=``), so their order is not repeatable; the
checkpoint is the step-level record instead.

Beside the run, a watcher polls the run's inbox (events sent by ``run.send`` in any process, and
cancellation), and a pump copies the run's stream to the database when a client streams it.
"""

from __future__ import annotations

import importlib
from typing import Any

import anyio
import anyio.to_thread
import sqlalchemy as sa

from plait import PlaitError, RunFailed, Workflow
from plait._checkpoint import decode_checkpoint

from ._checkpoints import SQLCheckpointStore
from ._codec import dump_event, load_event
from ._tables import EVENTS, INBOX

__all__ = ["CANCEL", "RunHost", "import_workflow", "workflow_ref"]

CANCEL = "!cancel"  # inbox type that asks the run to stop


def workflow_ref(workflow: type[Workflow[Any, Any]] | Workflow[Any, Any]) -> str:
    """``module:QualName`` of a workflow class, for a worker to import.

    :raises PlaitError: the class is defined inside a function (workers could not import it).
    """
    cls = workflow if isinstance(workflow, type) else type(workflow)
    if "<locals>" in cls.__qualname__ or cls.__module__ == "__main__":
        raise PlaitError(f"{cls.__qualname__} must be importable by worker processes: define "
                         "it at module level in a module the workers import")
    return f"{cls.__module__}:{cls.__qualname__}"


def import_workflow(ref: str) -> type[Workflow[Any, Any]]:
    """The workflow class named by ``workflow_ref``.

    :raises PlaitError: it cannot be imported or is not a Workflow.
    """
    module_name, _, qualname = ref.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise PlaitError(f"workflow {ref!r} is not importable in this worker") from exc
    if not (isinstance(obj, type) and issubclass(obj, Workflow)):
        raise PlaitError(f"{ref!r} is not a plait Workflow")
    return obj


class RunHost:
    """Executes runs in this worker process (one instance, created by ``DBOSRuntime.launch``)."""

    def __init__(self, engine: sa.Engine, *, poll_interval: float,
                 workflow_kwargs: dict[str, Any]) -> None:
        self.engine = engine
        self.poll_interval = poll_interval
        self.workflow_kwargs = workflow_kwargs

    async def execute(self, run_id: str, ref: str, start_type: str, start_data: bytes,
                      stream: bool) -> Any:
        """Run (or resume) one plait run to its end; its result is the DBOS workflow's result.

        :raises RunFailed: the run failed (the original error's type and message inside).
        """
        try:
            return await self._execute(run_id, ref, start_type, start_data, stream)
        except PlaitError as exc:
            if isinstance(exc, RunFailed):
                raise
            # DBOS pickles the error for the client; plait's errors have richer constructors
            # than pickle can replay, so the client gets a flat, faithful description.
            raise RunFailed(run_id, type(exc).__name__, str(exc)) from exc

    async def _execute(self, run_id: str, ref: str, start_type: str, start_data: bytes,
                       stream: bool) -> Any:
        wf = import_workflow(ref)(**self.workflow_kwargs)
        # Even a fresh run's first checkpoint (only its start event) is kept: it records that the
        # first step's attempt has begun, so a re-run after a crash sees ctx.attempt == 2.
        checkpoints = SQLCheckpointStore(self.engine)
        saved = await anyio.to_thread.run_sync(checkpoints.load_sync, run_id)
        if saved is not None:
            cp = decode_checkpoint(saved)
            if cp.status == "failed":
                raise RunFailed(run_id, cp.error or "PlaitError", "the run had failed")
            starter = wf.resume(run_id, store=checkpoints)
        else:
            starter = wf.start(load_event(start_type, start_data), run_id=run_id,
                               checkpoints=checkpoints)
        async with starter as run:
            outcome: list[Any] = []
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch, run, checkpoints)
                try:
                    if stream:
                        await self._pump(run)
                    outcome.append(await run.result())
                except PlaitError as exc:  # raised below, outside the task group's wrapping
                    outcome.append(exc)
                finally:
                    tg.cancel_scope.cancel()
        if isinstance(outcome[0], PlaitError):
            raise outcome[0]
        return outcome[0]

    async def _watch(self, run: Any, checkpoints: SQLCheckpointStore) -> None:
        """Deliver inbox events to the run, in order, and obey a cancel request."""
        delivered: set[int] = set()
        # Most runs never receive anything: poll quickly at first, then back off to a second.
        interval = self.poll_interval
        while True:
            await anyio.sleep(interval)
            interval = min(interval * 1.5, max(self.poll_interval, 1.0))
            rows = await anyio.to_thread.run_sync(self._inbox, run.run_id)
            if rows:
                interval = self.poll_interval
            for row_id, type_name, data in rows:
                if row_id in delivered:
                    continue  # applied; its row goes with the next saved checkpoint
                if type_name == CANCEL:
                    await anyio.to_thread.run_sync(self._drop_inbox, [row_id])
                    await run.cancel()
                    return
                delivered.add(row_id)
                # Marked before the run takes it in, with no await in between: the next
                # checkpoint saved is the first that contains it, and deletes the row.
                checkpoints.taken.append(row_id)
                try:
                    await run.send(load_event(type_name, data))
                except PlaitError:
                    return  # the run has ended meanwhile

    def _inbox(self, run_id: str) -> list[tuple[int, str, bytes]]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(INBOX.c.id, INBOX.c.type, INBOX.c.data)
                                .where(INBOX.c.run_id == run_id).order_by(INBOX.c.id))
            return [(r[0], r[1], bytes(r[2])) for r in rows]

    def _drop_inbox(self, ids: list[int]) -> None:
        with self.engine.begin() as conn:
            conn.execute(INBOX.delete().where(INBOX.c.id.in_(ids)))

    async def _pump(self, run: Any) -> None:
        """Copy the run's stream to the database for clients in other processes."""
        async for ev in run.events():
            type_name, data = dump_event(ev)
            await anyio.to_thread.run_sync(self._append, run.run_id, type_name, data)
        await anyio.to_thread.run_sync(self._append, run.run_id, "", b"")

    def _append(self, run_id: str, type_name: str, data: bytes) -> None:
        with self.engine.begin() as conn:
            conn.execute(EVENTS.insert().values(run_id=run_id, type=type_name, data=data))
