"""The scheduler of one run.

How an event moves (the hot path): a step's return value is routed by type through a per-run
dict to the consuming step. If that step has a free worker slot the event becomes a *ready* job;
the task that produced it runs one ready job itself, straight away, with no queue and no task
switch (a linear workflow runs entirely inside one task), and hands any others to new tasks. A
step whose slots are all busy keeps a FIFO backlog, and each worker that finishes a job takes the
next one from its own step's backlog, so ``workers`` long-lived tasks drain it. Nothing sets up a
timeout, a lifecycle event, a hook call or checkpoint bookkeeping unless the step or run asked
for it.

Fan-out / fan-in: a step returning a list opens a *group*. Every event descending from a member
of the group belongs to it; ``pending`` counts the group's jobs not yet finished. Events whose
type a fan-in step collects (``list[A]`` or ``tuple[A, B]``) are buffered in the group, and when
``pending`` reaches zero the buffer goes to the fan-in step as one job, which itself belongs to
the enclosing group. A member that emits nothing simply drops out; an empty fan-out delivers an
empty list to the fan-in its branches lead to.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import anyio

from . import _inbox as inbox
from . import _persist as persist
from ._backend import (
    AnyioBackend,
    AsyncioBackend,
    Backend,
    Signal,
    TimedOut,
    TrioBackend,
    current_backend,
)
from ._checkpoint import Checkpoint, CheckpointStore, SavedEvent
from ._context import Context
from ._errors import (
    StepFailed,
    StepTimeout,
    WorkflowCancelled,
    WorkflowDefinitionError,
    WorkflowStalled,
    WorkflowTimeout,
)
from ._events import Event, StepFinished, StepStarted, StopEvent
from ._graph import Graph
from ._hooks import RunHooks
from ._jobs import Group, Job, StepState, Waiter
from ._scope import HandleScope
from ._step import StepSpec
from ._store import ContentStore
from ._stream import EventStream

__all__ = ["Runtime"]


_STOP: Any = object()  # route target of stop events


class Runtime:
    """Everything one run owns; never shared between runs."""

    def __init__(self, wf: Any, graph: Graph, *, run_id: str, state: Any,
                 store: ContentStore | None, handles: HandleScope, hooks: RunHooks | None,
                 checkpoints: CheckpointStore | None, timeout: float | None,
                 stream_limit: int | None, forward_to: EventStream | None = None) -> None:
        self.wf = wf
        self.graph = graph
        self.run_id = run_id
        self.state = state
        self.store = store
        self.handles = handles
        self.hooks = hooks
        self.checkpoints = checkpoints
        self.timeout = timeout
        self.stream_limit = stream_limit
        self.send_limit = stream_limit or 1024
        self.parent: Runtime | None = None
        self.children: list[Runtime] = []
        # Set in execute(): the stream needs the backend's signal type.
        self.stream: EventStream | None = None
        self.user_stream: EventStream | None = forward_to
        self.finished = False
        self.error: BaseException | None = None
        self.stop_event: Event | None = None
        self.run_token: object = None
        self.backend: Backend | None = None
        self._done: Signal | None = None
        # Per-run step states and the routing table to them. Idle ones are recycled through the
        # graph's pool: building them costs about a microsecond per step and run otherwise.
        self._routes: dict[type, Any]
        self._rts: dict[str, StepState]
        try:
            self._routes, self._rts = graph.runtime_pool.pop()
        except IndexError:  # empty (or another thread took the last one)
            self._routes, self._rts = {}, {}
        self.next_id = 1
        self.live = 0
        self.joins: dict[StepState, list[Event]] = {}
        self.waiters: list[Waiter] = []
        self.mailbox: list[Event | SavedEvent] = []  # sent in, not yet claimed by a wait
        self.restored: list[Job] | None = None
        self.seq = 0
        self.closed = False
        self._closed: Signal | None = None
        tracking = checkpoints is not None
        self.open_jobs: dict[int, Job] | None = {} if tracking else None
        self.open_groups: dict[int, Group] | None = {} if tracking else None
        self.on_ready: Callable[[], object] | None = None

    # --- lifecycle -----------------------------------------------------------------------------

    async def execute(self, start: Event | None) -> None:
        """Run to the end (result or error recorded on self); only cancellation propagates."""
        try:
            library = current_backend()
            if library == "asyncio":
                backend = AsyncioBackend()
                self.backend = backend
                try:
                    await self._body(start)
                finally:
                    await backend.aclose()
            elif library == "trio":
                import trio

                async with trio.open_nursery() as nursery:
                    self.backend = TrioBackend(nursery)  # type: ignore[arg-type]
                    await self._body(start)
                    nursery.cancel_scope.cancel()
            else:
                # On trio the task group's own scope is the interrupt: finishing the run cancels
                # it, which stops the inline chain and every spawned worker at once.
                async with anyio.create_task_group() as tg:
                    self.backend = AnyioBackend(tg)
                    await self._body(start)
                    tg.cancel_scope.cancel()
        except BaseException as exc:
            # Cancelled from outside: the stream must still end and waiters must wake.
            self.finish(exc if isinstance(exc, Exception) else WorkflowCancelled(
                f"run {self.run_id} was cancelled"))
            raise
        finally:
            try:
                await self._end()
            finally:
                self.closed = True
                if self._closed is not None:
                    self._closed.set()

    async def wait_closed(self) -> None:
        """Wait until every task of the run has ended (their ``finally`` blocks have run)."""
        if not self.closed:
            if self._closed is None:
                assert self.backend is not None
                self._closed = self.backend.signal()
            await self._closed.wait()

    def next_seq(self) -> int:
        # Clock-based so that a new run reusing an old run id outranks the old checkpoints.
        self.seq = max(self.seq + 1, time.time_ns())
        return self.seq

    def _prepare(self) -> None:
        backend = self.backend
        assert backend is not None
        if self.stream_limit is not None:
            self.stream = EventStream(backend.signal, self.stream_limit)
            self.stream.on_block = self.wake_senders
            if self.user_stream is None:
                self.user_stream = self.stream
        if self.on_ready is not None:
            self.on_ready()

    async def _body(self, start: Event | None) -> None:
        """Deliver the start event (or restored jobs) and wait for the end; raises only
        cancellation."""
        self._prepare()
        backend = self.backend
        assert backend is not None
        if self.hooks is not None:
            self.run_token = self.hooks.run_started(self.graph.workflow, self.run_id)
        try:
            ready: list[Job] = []
            if start is not None:
                self.emit(start, None, None, ready)
            else:
                ready = persist.claim_restored(self)
            if self.checkpoints is not None:
                await self.save()
        except Exception as exc:  # noqa: BLE001 - the run's outcome, raised by result()
            self.finish(exc)
            return
        first = ready.pop() if ready else None
        for job in ready:
            backend.spawn(self.drive, job)
        if self.finished:
            return
        if self.timeout is None:
            await self._until_done(first)
            return
        try:
            await backend.call_with_timeout(self.timeout, self._until_done, first)
        except TimedOut:
            self.finish(WorkflowTimeout(self.graph.workflow, self.timeout))

    def _recycle(self) -> None:
        rts = self._rts
        for rt in rts.values():
            if rt.active or rt.backlog or rt.room is not None:
                return  # not idle (a cancelled run): let it go
        pool = self.graph.runtime_pool
        if len(pool) < 64:
            pool.append((self._routes, rts))

    async def _end(self) -> None:
        self._recycle()
        try:
            if self.checkpoints is not None and self.finished and \
                    not isinstance(self.error, WorkflowCancelled):
                await persist.save_final(self)
        finally:
            if self.hooks is not None:
                self.hooks.run_finished(self.run_token, self.error)

    def wake_senders(self) -> None:
        # Callers blocked in send() must not wait on a worker that itself waits for the caller
        # to read the stream: whenever the stream blocks a writer, senders go ahead.
        for rt in self._rts.values():
            if rt.room is not None:
                rt.room.set()
                rt.room = None

    async def _until_done(self, first: Job | None) -> None:
        # The first ready job runs in the caller's task: a linear workflow then completes
        # without creating a task or waiting on a signal at all.
        if first is not None and self.backend is not None:
            await self.backend.run_inline(self.drive, first)
        if not self.finished:
            await self._done_signal().wait()

    def _done_signal(self) -> Signal:
        # Created on demand: a run that ends inside its first inline chain never needs one.
        done = self._done
        if done is None:
            assert self.backend is not None
            done = self._done = self.backend.signal()
            if self.finished:
                done.set()
        return done

    def finish(self, error: BaseException | None) -> None:
        if self.finished:
            return
        self.finished = True
        self.error = error
        if self.stream is not None:
            self.stream.close()
        for waiter in self.waiters:
            waiter.signal.set()
        self.wake_senders()
        if self.backend is not None:
            self.backend.interrupt()
        if self._done is not None:
            self._done.set()

    def cancel(self) -> None:
        """End the run now with ``WorkflowCancelled``; running steps are cancelled."""
        self.finish(WorkflowCancelled(f"run {self.run_id} was cancelled"))

    def result(self) -> Any:
        """The run's return value, or raise its error (call once finished)."""
        if self.error is not None:
            raise self.error
        ev = self.stop_event
        if type(ev) is StopEvent:
            return ev.result
        return ev

    async def wait_done(self) -> None:
        """Wait until the run has finished."""
        if not self.finished:
            await self._done_signal().wait()

    # --- the worker loop -----------------------------------------------------------------------

    async def drive(self, job: Job) -> None:
        backend = self.backend
        assert backend is not None
        stream = self.stream
        try:
            while True:
                rt = job.step
                out = await self._attempts(job)
                if self.finished:
                    return
                ready = self._complete(job, out)
                if self.finished:  # this step emitted the stop event (or broke the run)
                    rt.active -= 1
                    return
                if rt.backlog:
                    nxt: Job | None = rt.backlog.popleft()
                    nxt.attempt += 1  # type: ignore[union-attr]
                    if rt.room is not None and len(rt.backlog) < self.send_limit:
                        rt.room.set()
                        rt.room = None
                else:
                    rt.active -= 1
                    nxt = ready.pop() if ready else None
                if self.checkpoints is not None:
                    await self.save()
                for other in ready:
                    backend.spawn(self.drive, other)
                if nxt is None:
                    if self.live == 0 and not self.finished:
                        self.finish(WorkflowStalled(
                            f"{self.graph.workflow}: nothing is running or pending and no step "
                            "emitted a stop event"
                        ))
                    return
                if stream is not None and stream.full:
                    await stream.wait_for_room()
                if self.finished:
                    return
                job = nxt
        except Exception as exc:  # noqa: BLE001 - the run's outcome, raised by result()
            self.finish(exc)

    async def _attempts(self, job: Job) -> Any:
        rt = job.step
        hooks = self.hooks
        stream = self.stream
        ctx = job.ctx
        if ctx is None and rt.takes_ctx:
            ctx = job.ctx = Context._bind(self, job)
        while True:
            attempt = job.attempt
            if stream is not None:
                stream.put(StepStarted(step=rt.name, attempt=attempt))
            if hooks is not None:
                origin = job.origin
                origins: Sequence[object] = (
                    origin if isinstance(origin, list) else () if origin is None else (origin,)
                )
                token = job.token = hooks.step_started(self.run_token, rt.name, attempt, origins)
            try:
                if rt.timeout is None:
                    if rt.takes_ctx:
                        out = await rt.func(self.wf, job.event, ctx)
                    else:
                        out = await rt.func(self.wf, job.event)
                else:
                    args = (self.wf, job.event, ctx) if rt.takes_ctx else (self.wf, job.event)
                    assert self.backend is not None
                    out = await self.backend.call_with_timeout(rt.timeout, rt.func, *args)
            except Exception as exc:
                if hooks is not None:
                    hooks.step_finished(token, StepTimeout(rt.name, rt.timeout or 0.0, attempt)
                                        if isinstance(exc, TimedOut) else exc)
                if stream is not None:
                    stream.put(StepFinished(step=rt.name, attempt=attempt,
                                            error="TimeoutError" if isinstance(exc, TimedOut)
                                            else type(exc).__name__))
                retry = rt.retry
                if retry is not None and retry.retries(exc, attempt) and not self.finished:
                    delay = retry.delay(attempt)
                    job.attempt += 1
                    if self.checkpoints is not None:
                        await self.save()
                    if delay > 0:
                        await anyio.sleep(delay)
                    continue
                if isinstance(exc, TimedOut):
                    assert rt.timeout is not None
                    raise StepTimeout(rt.name, rt.timeout, attempt) from None
                raise StepFailed(
                    rt.name, attempt,
                    f"step {rt.name!r} failed on attempt {attempt}: {type(exc).__name__}",
                ) from exc
            except BaseException as exc:  # cancelled: the hooks still see the attempt end
                if hooks is not None:
                    hooks.step_finished(token, exc)
                raise
            if hooks is not None:
                hooks.step_finished(token, None)
            if stream is not None:
                stream.put(StepFinished(step=rt.name, attempt=attempt))
            return out

    # --- routing, fan-out, fan-in --------------------------------------------------------------

    def step_state(self, spec: StepSpec) -> StepState:
        rt = self._rts.get(spec.name)
        if rt is None:
            rt = self._rts[spec.name] = StepState(spec)
        return rt

    def _resolve(self, tp: type) -> Any:
        spec = self.graph.route(tp)
        if spec is None:
            if not issubclass(tp, StopEvent):
                raise WorkflowDefinitionError(
                    f"{self.graph.workflow}: no step takes {tp.__name__} (declare the events a "
                    "step emits in its return annotation)"
                )
            target: Any = _STOP
        else:
            target = self.step_state(spec)
        self._routes[tp] = target
        return target

    def emit(self, ev: Event, group: Group | None, origin: object,
              ready: list[Job]) -> None:
        tp = type(ev)
        rt = self._routes.get(tp)
        if rt is None:
            rt = self._resolve(tp)
        if rt is _STOP:
            if not self.finished:
                self.stop_event = ev
                self.finish(None)
            return
        if rt.mode == "one":
            if group is not None:
                group.pending += 1
            self._job(rt, ev, group, origin, ready)
        else:
            self._collect(rt, ev, group, origin, ready)

    def _collect(self, rt: StepState, ev: Event, group: Group | None, origin: object,
                 ready: list[Job]) -> None:
        if group is not None:
            buffers = group.buffers
            if buffers is None:
                buffers = group.buffers = {}
            items = buffers.get(rt)
            if items is None:
                items = buffers[rt] = []
            items.append(ev)
            if self.hooks is not None:
                if group.origins is None:
                    group.origins = {}
                group.origins.setdefault(rt, []).append(origin)
            return
        origins = [origin] if self.hooks is not None else None
        if rt.mode == "list":
            self._job(rt, [ev], None, origins, ready)
            return
        # A join outside any fan-out: fire as soon as one event of each type is waiting.
        waiting = self.joins.setdefault(rt, [])
        waiting.append(ev)
        picked: list[Event] = []
        for tp in rt.accepts:
            found = next((e for e in waiting
                          if isinstance(e, tp) and all(e is not p for p in picked)), None)
            if found is None:
                return
            picked.append(found)
        self.joins[rt] = [e for e in waiting if all(e is not p for p in picked)]
        self._job(rt, tuple(picked), None, origins, ready)

    def _job(self, rt: StepState, payload: Any, group: Group | None, origin: Any,
             ready: list[Job]) -> None:
        """A new job for ``rt``: ready to run now if a worker slot is free, else backlogged."""
        job = Job(self.next_id, rt, payload, group, origin)
        self.next_id += 1
        self.live += 1
        if self.open_jobs is not None:
            self.open_jobs[job.id] = job
        if rt.active < rt.workers:
            rt.active += 1
            job.attempt = 1
            ready.append(job)
        else:
            rt.backlog.append(job)

    def _fan_out(self, events: list[Any], group: Group | None, origin: object,
                 source: StepState, ready: list[Job]) -> None:
        sub = Group(self.next_id, group, self.graph.default_collector.get(source.name))
        self.next_id += 1
        if self.open_groups is not None:
            self.open_groups[sub.id] = sub
        emit = self.emit
        for ev in events:
            if not isinstance(ev, Event):
                raise StepFailed(
                    source.name, 0, f"step {source.name!r} returned a list holding "
                    f"{type(ev).__name__}, not events",
                ) from TypeError(type(ev).__name__)
            emit(ev, sub, origin, ready)
        if group is not None:
            group.pending += 1
        if sub.pending == 0:
            self._close(sub, ready)

    def _close(self, group: Group, ready: list[Job]) -> None:
        if self.open_groups is not None:
            self.open_groups.pop(group.id, None)
        parent = group.parent
        batches = 0
        if group.buffers:
            for rt, items in group.buffers.items():
                payload: Any = items if rt.mode == "list" else self._join_tuple(rt, items)
                origins = group.origins.get(rt) if group.origins is not None else None
                self._job(rt, payload, parent, origins, ready)
                batches += 1
        elif group.default is not None and group.default.mode == "list":
            self._job(self.step_state(group.default), [], parent,
                        [] if self.hooks is not None else None, ready)
            batches = 1
        if parent is not None:
            parent.pending += batches - 1
            if parent.pending == 0:
                self._close(parent, ready)

    @staticmethod
    def _join_tuple(rt: StepState, items: list[Event]) -> tuple[Event, ...]:
        picked = []
        for tp in rt.accepts:
            matches = [e for e in items if isinstance(e, tp)]
            if len(matches) != 1:
                got = ", ".join(type(e).__name__ for e in items) or "nothing"
                raise StepFailed(
                    rt.name, 0,
                    f"join step {rt.name!r} needs exactly one of each of "
                    f"{', '.join(t.__name__ for t in rt.accepts)} from its fan-out; got {got}",
                )
            picked.append(matches[0])
        return tuple(picked)

    def _complete(self, job: Job, out: Any) -> list[Job]:
        ready: list[Job] = []
        group = job.group
        if out is not None:
            if isinstance(out, Event):
                self.emit(out, group, job.token, ready)
            elif isinstance(out, list):
                self._fan_out(out, group, job.token, job.step, ready)
            else:
                raise StepFailed(
                    job.step.name, job.attempt,
                    f"step {job.step.name!r} returned {type(out).__name__}; a step returns an "
                    "event, a list of events, or None",
                )
        self.live -= 1
        if self.open_jobs is not None:
            self.open_jobs.pop(job.id, None)
        if group is not None:
            group.pending -= 1
            if group.pending == 0:
                self._close(group, ready)
        return ready

    # --- what Context and Run call -------------------------------------------------------------

    def send_event(self, job: Job | None, ev: Event) -> None:
        """Deliver ``ev`` now, as if ``job`` had emitted it (``None``: from outside the run)."""
        if not isinstance(ev, Event):
            raise TypeError(f"send_event takes an Event, not {type(ev).__name__}")
        if self.finished:
            return
        ready: list[Job] = []
        if job is None:
            self.emit(ev, None, None, ready)
        else:
            self.emit(ev, job.group, job.token, ready)
        self._start(ready)

    def _start(self, ready: list[Job]) -> None:
        backend = self.backend
        assert backend is not None
        if not ready:
            return
        if self.checkpoints is not None:
            backend.spawn(self._save_then_drive, ready)
        else:
            for job in ready:
                backend.spawn(self.drive, job)

    async def _save_then_drive(self, ready: list[Job]) -> None:
        try:
            await self.save()
        except Exception as exc:  # noqa: BLE001 - the run's outcome, raised by result()
            self.finish(exc)
            return
        assert self.backend is not None
        for job in ready[1:]:
            self.backend.spawn(self.drive, job)
        await self.drive(ready[0])

    def write_to_stream(self, ev: Event) -> None:
        """Put ``ev`` on the caller's stream (no-op when nobody streams this run)."""
        stream = self.user_stream
        if stream is not None:
            stream.put(ev)

    # --- checkpoints and the caller's side (implemented in _persist and _inbox) ----------------

    async def save(self) -> None:
        """Write a checkpoint of the run as it is now."""
        await persist.save(self)

    def restore(self, cp: Checkpoint) -> None:
        """Load a running checkpoint (before ``execute(None)``).

        :raises CheckpointError: it names steps or events this workflow lacks.
        """
        persist.restore(self, cp)

    async def wait_for(self, job: Job, event_type: type[Event],
                       where: Callable[[Any], bool] | None, timeout: float | None,
                       prompt: Any) -> Event:
        """Park ``job`` until the caller sends a matching event (see ``_inbox.wait_for``)."""
        return await inbox.wait_for(self, job, event_type, where, timeout, prompt)

    async def sleep(self, job: Job, seconds: float) -> None:
        """Pause ``job`` for ``seconds``, durably when checkpointed (see ``_inbox.sleep``)."""
        await inbox.sleep(self, job, seconds)

    async def send(self, ev: Event) -> None:
        """An event from the caller (see ``_inbox.send``)."""
        await inbox.send(self, ev)
