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
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import anyio

from ._backend import (
    AnyioBackend,
    AsyncioBackend,
    Backend,
    Signal,
    TimedOut,
    TrioBackend,
    current_backend,
)
from ._checkpoint import (
    Checkpoint,
    CheckpointStore,
    SavedEvent,
    SavedGroup,
    SavedJob,
    decode_event,
    encode_checkpoint,
    encode_event,
    encode_state,
)
from ._context import Context
from ._errors import (
    PlaitError,
    StepFailed,
    StepTimeout,
    WorkflowCancelled,
    WorkflowDefinitionError,
    WorkflowStalled,
    WorkflowTimeout,
)
from ._events import Event, InputRequired, StepFinished, StepStarted, StopEvent, event_type_name
from ._graph import Graph
from ._hooks import RunHooks
from ._scope import HandleScope
from ._step import StepSpec
from ._store import ContentStore
from ._stream import EventStream

__all__ = ["Runtime"]


class _StepRT:
    """Per-run state of one step: busy worker slots and the backlog."""

    __slots__ = ("accepts", "active", "backlog", "func", "mode", "name", "retry", "room", "spec",
                 "takes_ctx", "timeout", "workers")

    def __init__(self, spec: StepSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.func = spec.func
        self.takes_ctx = spec.takes_ctx
        self.workers = spec.options.workers
        self.timeout = spec.options.timeout
        self.retry = spec.options.retry
        self.mode = spec.mode
        self.accepts = spec.accepts
        self.active = 0
        self.backlog: deque[_Job] = deque()
        self.room: Signal | None = None  # set when the backlog drains, for Runtime.send


class _Group:
    """One fan-out in progress."""

    __slots__ = ("buffers", "default", "id", "origins", "parent", "pending")

    def __init__(self, gid: int, parent: _Group | None, default: StepSpec | None) -> None:
        self.id = gid
        self.parent = parent
        self.pending = 0
        self.default = default
        self.buffers: dict[_StepRT, list[Event]] | None = None
        self.origins: dict[_StepRT, list[object]] | None = None


class _Job:
    """An event (or a fan-in batch) delivered to a step, until the step has handled it."""

    __slots__ = ("answers", "attempt", "ctx", "event", "group", "id", "origin", "rt", "token",
                 "waits")

    def __init__(self, jid: int, rt: _StepRT, event: Any, group: _Group | None,
                 origin: Any) -> None:
        self.id = jid
        self.rt = rt
        self.event = event
        self.group = group
        self.origin = origin
        self.attempt = 0  # attempts begun (or claimed and about to begin)
        self.answers: list[Event | SavedEvent] | None = None
        self.waits = 0
        self.ctx: Context[Any] | None = None
        self.token: object = None


class _Waiter:
    __slots__ = ("event_type", "job", "signal", "where")

    def __init__(self, event_type: type[Event], where: Callable[[Any], bool] | None,
                 signal: Signal, job: _Job) -> None:
        self.event_type = event_type
        self.where = where
        self.signal = signal
        self.job = job


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
        self._children: list[Runtime] = []
        # Set in execute(): the stream needs the backend's signal type.
        self.stream: EventStream | None = None
        self.user_stream: EventStream | None = forward_to
        self.finished = False
        self.error: BaseException | None = None
        self.stop_event: Event | None = None
        self.run_token: object = None
        self._backend: Backend | None = None
        self._done: Signal | None = None
        # Per-run step states and the routing table to them. Idle ones are recycled through the
        # graph's pool: building them costs about a microsecond per step and run otherwise.
        self._routes: dict[type, Any]
        self._rts: dict[str, _StepRT]
        try:
            self._routes, self._rts = graph.runtime_pool.pop()
        except IndexError:  # empty (or another thread took the last one)
            self._routes, self._rts = {}, {}
        self._next_id = 1
        self._live = 0
        self._joins: dict[_StepRT, list[Event]] = {}
        self._waiters: list[_Waiter] = []
        self._mailbox: list[Event | SavedEvent] = []
        self._restored: list[_Job] | None = None
        self._seq = 0
        self.closed = False
        self._closed: Signal | None = None
        tracking = checkpoints is not None
        self._open: dict[int, _Job] | None = {} if tracking else None
        self._groups: dict[int, _Group] | None = {} if tracking else None
        self.on_ready: Callable[[], object] | None = None

    # --- lifecycle -----------------------------------------------------------------------------

    async def execute(self, start: Event | None) -> None:
        """Run to the end (result or error recorded on self); only cancellation propagates."""
        try:
            library = current_backend()
            if library == "asyncio":
                backend = AsyncioBackend()
                self._backend = backend
                try:
                    await self._body(start)
                finally:
                    await backend.aclose()
            elif library == "trio":
                import trio

                async with trio.open_nursery() as nursery:
                    self._backend = TrioBackend(nursery)  # type: ignore[arg-type]
                    await self._body(start)
                    nursery.cancel_scope.cancel()
            else:
                # On trio the task group's own scope is the interrupt: finishing the run cancels
                # it, which stops the inline chain and every spawned worker at once.
                async with anyio.create_task_group() as tg:
                    self._backend = AnyioBackend(tg)
                    await self._body(start)
                    tg.cancel_scope.cancel()
        except BaseException as exc:
            # Cancelled from outside: the stream must still end and waiters must wake.
            self._finish(exc if isinstance(exc, Exception) else WorkflowCancelled(
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
                assert self._backend is not None
                self._closed = self._backend.signal()
            await self._closed.wait()

    def _next_seq(self) -> int:
        # Clock-based so that a new run reusing an old run id outranks the old checkpoints.
        self._seq = max(self._seq + 1, time.time_ns())
        return self._seq

    def _prepare(self) -> None:
        backend = self._backend
        assert backend is not None
        if self.stream_limit is not None:
            self.stream = EventStream(backend.signal, self.stream_limit)
            self.stream.on_block = self._wake_senders
            if self.user_stream is None:
                self.user_stream = self.stream
        if self.on_ready is not None:
            self.on_ready()

    async def _body(self, start: Event | None) -> None:
        """Deliver the start event (or restored jobs) and wait for the end; raises only
        cancellation."""
        self._prepare()
        backend = self._backend
        assert backend is not None
        if self.hooks is not None:
            self.run_token = self.hooks.run_started(self.graph.workflow, self.run_id)
        try:
            ready: list[_Job] = []
            if start is not None:
                self._emit(start, None, None, ready)
            else:
                ready = self._claim_restored()
            if self.checkpoints is not None:
                await self._save()
        except Exception as exc:  # noqa: BLE001 - the run's outcome, raised by result()
            self._finish(exc)
            return
        first = ready.pop() if ready else None
        for job in ready:
            backend.spawn(self._drive, job)
        if self.finished:
            return
        if self.timeout is None:
            await self._until_done(first)
            return
        try:
            await backend.call_with_timeout(self.timeout, self._until_done, first)
        except TimedOut:
            self._finish(WorkflowTimeout(self.graph.workflow, self.timeout))

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
                await self._save_final()
        finally:
            if self.hooks is not None:
                self.hooks.run_finished(self.run_token, self.error)

    def _wake_senders(self) -> None:
        # Callers blocked in send() must not wait on a worker that itself waits for the caller
        # to read the stream: whenever the stream blocks a writer, senders go ahead.
        for rt in self._rts.values():
            if rt.room is not None:
                rt.room.set()
                rt.room = None

    async def _until_done(self, first: _Job | None) -> None:
        # The first ready job runs in the caller's task: a linear workflow then completes
        # without creating a task or waiting on a signal at all.
        if first is not None and self._backend is not None:
            await self._backend.run_inline(self._drive, first)
        if not self.finished:
            await self._done_signal().wait()

    def _done_signal(self) -> Signal:
        # Created on demand: a run that ends inside its first inline chain never needs one.
        done = self._done
        if done is None:
            assert self._backend is not None
            done = self._done = self._backend.signal()
            if self.finished:
                done.set()
        return done

    def _finish(self, error: BaseException | None) -> None:
        if self.finished:
            return
        self.finished = True
        self.error = error
        if self.stream is not None:
            self.stream.close()
        for waiter in self._waiters:
            waiter.signal.set()
        self._wake_senders()
        if self._backend is not None:
            self._backend.interrupt()
        if self._done is not None:
            self._done.set()

    def cancel(self) -> None:
        """End the run now with ``WorkflowCancelled``; running steps are cancelled."""
        self._finish(WorkflowCancelled(f"run {self.run_id} was cancelled"))

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

    async def _drive(self, job: _Job) -> None:
        backend = self._backend
        assert backend is not None
        stream = self.stream
        try:
            while True:
                rt = job.rt
                out = await self._attempts(job)
                if self.finished:
                    return
                ready = self._complete(job, out)
                if self.finished:  # this step emitted the stop event (or broke the run)
                    rt.active -= 1
                    return
                if rt.backlog:
                    nxt: _Job | None = rt.backlog.popleft()
                    nxt.attempt += 1  # type: ignore[union-attr]
                    if rt.room is not None and len(rt.backlog) < self.send_limit:
                        rt.room.set()
                        rt.room = None
                else:
                    rt.active -= 1
                    nxt = ready.pop() if ready else None
                if self.checkpoints is not None:
                    await self._save()
                for other in ready:
                    backend.spawn(self._drive, other)
                if nxt is None:
                    if self._live == 0 and not self.finished:
                        self._finish(WorkflowStalled(
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
            self._finish(exc)

    async def _attempts(self, job: _Job) -> Any:
        rt = job.rt
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
                    assert self._backend is not None
                    out = await self._backend.call_with_timeout(rt.timeout, rt.func, *args)
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
                        await self._save()
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
            if hooks is not None:
                hooks.step_finished(token, None)
            if stream is not None:
                stream.put(StepFinished(step=rt.name, attempt=attempt))
            return out

    # --- routing, fan-out, fan-in --------------------------------------------------------------

    def _step_rt(self, spec: StepSpec) -> _StepRT:
        rt = self._rts.get(spec.name)
        if rt is None:
            rt = self._rts[spec.name] = _StepRT(spec)
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
            target = self._step_rt(spec)
        self._routes[tp] = target
        return target

    def _emit(self, ev: Event, group: _Group | None, origin: object,
              ready: list[_Job]) -> None:
        tp = type(ev)
        rt = self._routes.get(tp)
        if rt is None:
            rt = self._resolve(tp)
        if rt is _STOP:
            if not self.finished:
                self.stop_event = ev
                self._finish(None)
            return
        if rt.mode == "one":
            if group is not None:
                group.pending += 1
            self._job(rt, ev, group, origin, ready)
        else:
            self._collect(rt, ev, group, origin, ready)

    def _collect(self, rt: _StepRT, ev: Event, group: _Group | None, origin: object,
                 ready: list[_Job]) -> None:
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
        waiting = self._joins.setdefault(rt, [])
        waiting.append(ev)
        picked: list[Event] = []
        for tp in rt.accepts:
            found = next((e for e in waiting
                          if isinstance(e, tp) and all(e is not p for p in picked)), None)
            if found is None:
                return
            picked.append(found)
        self._joins[rt] = [e for e in waiting if all(e is not p for p in picked)]
        self._job(rt, tuple(picked), None, origins, ready)

    def _job(self, rt: _StepRT, payload: Any, group: _Group | None, origin: Any,
             ready: list[_Job]) -> None:
        """A new job for ``rt``: ready to run now if a worker slot is free, else backlogged."""
        job = _Job(self._next_id, rt, payload, group, origin)
        self._next_id += 1
        self._live += 1
        if self._open is not None:
            self._open[job.id] = job
        if rt.active < rt.workers:
            rt.active += 1
            job.attempt = 1
            ready.append(job)
        else:
            rt.backlog.append(job)

    def _fan_out(self, events: list[Any], group: _Group | None, origin: object,
                 source: _StepRT, ready: list[_Job]) -> None:
        sub = _Group(self._next_id, group, self.graph.default_collector.get(source.name))
        self._next_id += 1
        if self._groups is not None:
            self._groups[sub.id] = sub
        emit = self._emit
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

    def _close(self, group: _Group, ready: list[_Job]) -> None:
        if self._groups is not None:
            self._groups.pop(group.id, None)
        parent = group.parent
        batches = 0
        if group.buffers:
            for rt, items in group.buffers.items():
                payload: Any = items if rt.mode == "list" else self._join_tuple(rt, items)
                origins = group.origins.get(rt) if group.origins is not None else None
                self._job(rt, payload, parent, origins, ready)
                batches += 1
        elif group.default is not None and group.default.mode == "list":
            self._job(self._step_rt(group.default), [], parent,
                        [] if self.hooks is not None else None, ready)
            batches = 1
        if parent is not None:
            parent.pending += batches - 1
            if parent.pending == 0:
                self._close(parent, ready)

    @staticmethod
    def _join_tuple(rt: _StepRT, items: list[Event]) -> tuple[Event, ...]:
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

    def _complete(self, job: _Job, out: Any) -> list[_Job]:
        ready: list[_Job] = []
        group = job.group
        if out is not None:
            if isinstance(out, Event):
                self._emit(out, group, job.token, ready)
            elif isinstance(out, list):
                self._fan_out(out, group, job.token, job.rt, ready)
            else:
                raise StepFailed(
                    job.rt.name, job.attempt,
                    f"step {job.rt.name!r} returned {type(out).__name__}; a step returns an "
                    "event, a list of events, or None",
                )
        self._live -= 1
        if self._open is not None:
            self._open.pop(job.id, None)
        if group is not None:
            group.pending -= 1
            if group.pending == 0:
                self._close(group, ready)
        return ready

    # --- what Context and Run call -------------------------------------------------------------

    def send_event(self, job: _Job | None, ev: Event) -> None:
        """Deliver ``ev`` now, as if ``job`` had emitted it (``None``: from outside the run)."""
        if not isinstance(ev, Event):
            raise TypeError(f"send_event takes an Event, not {type(ev).__name__}")
        if self.finished:
            return
        ready: list[_Job] = []
        if job is None:
            self._emit(ev, None, None, ready)
        else:
            self._emit(ev, job.group, job.token, ready)
        self._start(ready)

    def _start(self, ready: list[_Job]) -> None:
        backend = self._backend
        assert backend is not None
        if not ready:
            return
        if self.checkpoints is not None:
            backend.spawn(self._save_then_drive, ready)
        else:
            for job in ready:
                backend.spawn(self._drive, job)

    async def _save_then_drive(self, ready: list[_Job]) -> None:
        try:
            await self._save()
        except Exception as exc:  # noqa: BLE001 - the run's outcome, raised by result()
            self._finish(exc)
            return
        assert self._backend is not None
        for job in ready[1:]:
            self._backend.spawn(self._drive, job)
        await self._drive(ready[0])

    def write_to_stream(self, ev: Event) -> None:
        """Put ``ev`` on the caller's stream (no-op when nobody streams this run)."""
        stream = self.user_stream
        if stream is not None:
            stream.put(ev)

    async def wait_for(self, job: _Job, event_type: type[Event],
                       where: Callable[[Any], bool] | None, timeout: float | None,
                       prompt: Any) -> Event:
        """Park ``job`` until the caller sends a matching event (or replay a saved answer)."""
        n = job.waits
        job.waits += 1
        answers = job.answers
        if answers is None:
            answers = job.answers = []
        if n < len(answers):
            saved = answers[n]
            if isinstance(saved, SavedEvent):
                known = dict(self.graph.types)
                known[event_type_name(event_type)] = event_type
                saved = answers[n] = decode_event(saved, known)
            return saved
        found = self._take_mailbox(event_type, where)
        if found is not None:
            answers.append(found)
            if self.checkpoints is not None:
                await self._save()
            return found
        caller = self._caller_stream()
        if caller is None:
            raise PlaitError(
                f"step {job.rt.name!r} waits for {event_type.__name__}, but nobody can answer: "
                "start the run with Workflow.start() and answer with run.send()"
            )
        assert self._backend is not None
        waiter = _Waiter(event_type, where, self._backend.signal(), job)
        self._waiters.append(waiter)
        try:
            caller.put(InputRequired(step=job.rt.name, event_type=event_type.__name__,
                                     waiter_id=f"{self.run_id}/{job.id}.{n}", prompt=prompt))
            if self.checkpoints is not None:
                await self._save()
            if timeout is None:
                await waiter.signal.wait()
            else:
                await self._backend.call_with_timeout(timeout, waiter.signal.wait)
        except TimedOut:
            raise TimeoutError(
                f"no {event_type.__name__} arrived within {timeout}s"
            ) from None
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
        if n >= len(answers):  # woken because the run ended
            raise WorkflowCancelled(f"run {self.run_id} ended while waiting for "
                                    f"{event_type.__name__}")
        answer = answers[n]
        assert isinstance(answer, Event)
        return answer

    def _caller_stream(self) -> EventStream | None:
        run: Runtime | None = self
        while run is not None:
            if run.stream is not None:
                return run.stream
            run = run.parent
        return None

    def _answer(self, ev: Event) -> bool:
        """Hand ``ev`` to a matching waiter here or in a running child run."""
        for waiter in self._waiters:
            if isinstance(ev, waiter.event_type) and (waiter.where is None or waiter.where(ev)):
                self._waiters.remove(waiter)
                answers = waiter.job.answers
                assert answers is not None
                answers.append(ev)
                waiter.signal.set()
                return True
        return any(child._answer(ev) for child in self._children)

    def _take_mailbox(self, event_type: type[Event],
                      where: Callable[[Any], bool] | None) -> Event | None:
        name = event_type_name(event_type)
        for i, item in enumerate(self._mailbox):
            if isinstance(item, SavedEvent):
                if item.type != name:
                    continue
                item = self._mailbox[i] = decode_event(item, {name: event_type})
            if isinstance(item, event_type) and (where is None or where(item)):
                del self._mailbox[i]
                return item
        return None

    async def send(self, ev: Event) -> None:
        """An event from the caller: answer a waiting step, feed a step, or keep it for later."""
        if not isinstance(ev, Event):
            raise TypeError(f"send takes an Event, not {type(ev).__name__}")
        if self.finished:
            raise PlaitError(f"run {self.run_id} has already finished")
        if self._answer(ev):
            if self.checkpoints is not None:
                await self._save()
            return
        spec = self.graph.route(type(ev))
        if spec is not None:
            # Backpressure on the caller: wait while the consuming step is far behind.
            rt = self._step_rt(spec)
            stream = self.stream
            while len(rt.backlog) >= self.send_limit and not self.finished and not (
                    stream is not None and stream.full):
                if rt.room is None:
                    assert self._backend is not None
                    rt.room = self._backend.signal()
                await rt.room.wait()
            if self.finished:
                raise PlaitError(f"run {self.run_id} has already finished")
            self.send_event(None, ev)
            return
        self._mailbox.append(ev)
        if self.checkpoints is not None:
            await self._save()

    # --- checkpoints ---------------------------------------------------------------------------

    def _snapshot(self, status: str) -> Checkpoint:
        seq = self._next_seq()
        jobs = []
        assert self._open is not None and self._groups is not None
        for job in self._open.values():
            batch = isinstance(job.event, list | tuple)
            events = [encode_event(e) for e in job.event] if batch else [encode_event(job.event)]
            answers = [a if isinstance(a, SavedEvent) else encode_event(a)
                       for a in job.answers or ()]
            jobs.append(SavedJob(job.id, job.rt.name, events, batch,
                                 job.group.id if job.group is not None else 0, job.attempt,
                                 answers))
        groups = [
            SavedGroup(
                g.id, g.parent.id if g.parent is not None else 0, g.pending,
                g.default.name if g.default is not None else None,
                {rt.name: [encode_event(e) for e in items]
                 for rt, items in (g.buffers or {}).items()},
            )
            for g in self._groups.values()
        ]
        return Checkpoint(
            workflow=self.graph.workflow, run_id=self.run_id, seq=seq, status=status,
            next_id=self._next_id,
            state=encode_state(self.state) if self.state is not None else None,
            jobs=jobs, groups=groups,
            joins={rt.name: [encode_event(e) for e in evs] for rt, evs in self._joins.items()},
            mailbox=[m if isinstance(m, SavedEvent) else encode_event(m) for m in self._mailbox],
        )

    async def _save(self) -> None:
        assert self.checkpoints is not None
        cp = self._snapshot("running")
        await self.checkpoints.save(self.run_id, cp.seq, cp.workflow, cp.status,
                                    encode_checkpoint(cp))

    async def _save_final(self) -> None:
        assert self.checkpoints is not None
        failed = self.error is not None
        cp = Checkpoint(workflow=self.graph.workflow, run_id=self.run_id, seq=self._next_seq(),
                        status="failed" if failed else "done", next_id=self._next_id,
                        state=encode_state(self.state) if self.state is not None else None)
        if failed:
            cp.error = type(self.error).__name__
        elif self.stop_event is not None:
            try:
                cp.result = encode_event(self.stop_event)
            except PlaitError:
                cp.result = None  # an unencodable result: the run is done, its value not kept
        with anyio.CancelScope(shield=True):
            await self.checkpoints.save(self.run_id, cp.seq, cp.workflow, cp.status,
                                        encode_checkpoint(cp))

    def restore(self, cp: Checkpoint) -> None:
        """Load a running checkpoint's jobs, groups and buffers (before ``execute(None)``).

        :raises CheckpointError: the checkpoint names steps or events this workflow lacks.
        """
        from ._errors import CheckpointError

        known = dict(self.graph.types)
        steps = self.graph.steps

        def rt_named(name: str) -> _StepRT:
            spec = steps.get(name)
            if spec is None:
                raise CheckpointError(f"checkpoint names step {name!r}, which "
                                      f"{self.graph.workflow} does not have")
            return self._step_rt(spec)

        groups: dict[int, _Group] = {}
        for sg in cp.groups:
            default = steps.get(sg.default) if sg.default else None
            groups[sg.id] = _Group(sg.id, None, default)
        for sg in cp.groups:
            g = groups[sg.id]
            g.parent = groups.get(sg.parent)
            g.pending = sg.pending
            if sg.buffers:
                g.buffers = {rt_named(name): [decode_event(e, known) for e in evs]
                             for name, evs in sg.buffers.items()}
        assert self._groups is not None and self._open is not None
        self._groups.update(groups)
        jobs = []
        for sj in sorted(cp.jobs, key=lambda j: j.id):
            rt = rt_named(sj.step)
            events = [decode_event(e, known) for e in sj.events]
            payload: Any = events[0] if not sj.batch else (
                events if rt.mode == "list" else tuple(events))
            job = _Job(sj.id, rt, payload, groups.get(sj.group), None)
            job.attempt = sj.attempt
            job.answers = list(sj.answers)
            jobs.append(job)
            self._open[job.id] = job
        self._live = len(jobs)
        self._joins = {rt_named(name): [decode_event(e, known) for e in evs]
                       for name, evs in cp.joins.items()}
        self._mailbox = list(cp.mailbox)
        self._next_id = cp.next_id
        self._seq = cp.seq
        self._restored = jobs

    def _claim_restored(self) -> list[_Job]:
        ready = []
        for job in self._restored or ():
            rt = job.rt
            if rt.active < rt.workers:
                rt.active += 1
                job.attempt += 1
                ready.append(job)
            else:
                rt.backlog.append(job)
        self._restored = None
        if not ready and self._live == 0:
            self._finish(WorkflowStalled(f"run {self.run_id} has nothing left to run"))
        return ready
