"""The records the scheduler keeps per run: step states, jobs, fan-out groups, waiters."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._backend import Signal
from ._checkpoint import SavedEvent
from ._events import Event
from ._step import StepSpec

if TYPE_CHECKING:
    from ._context import Context

__all__ = ["Group", "Job", "StepState", "Waiter"]


class StepState:
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
        self.backlog: deque[Job] = deque()
        self.room: Signal | None = None  # set when the backlog drains, for Runtime.send


class Group:
    """One fan-out in progress."""

    __slots__ = ("buffers", "default", "id", "origins", "parent", "pending")

    def __init__(self, gid: int, parent: Group | None, default: StepSpec | None) -> None:
        self.id = gid
        self.parent = parent
        self.pending = 0
        self.default = default
        self.buffers: dict[StepState, list[Event]] | None = None
        self.origins: dict[StepState, list[object]] | None = None


class Job:
    """An event (or a fan-in batch) delivered to a step, until the step has handled it."""

    __slots__ = ("answers", "attempt", "ctx", "event", "group", "id", "origin", "step", "token",
                 "waits")

    def __init__(self, jid: int, step: StepState, event: Any, group: Group | None,
                 origin: Any) -> None:
        self.id = jid
        self.step = step
        self.event = event
        self.group = group
        self.origin = origin
        self.attempt = 0  # attempts begun (or claimed and about to begin)
        self.answers: list[Event | SavedEvent] | None = None
        self.waits = 0
        self.ctx: Context[Any] | None = None
        self.token: object = None


class Waiter:
    """A step parked in ``ctx.wait_for``."""

    __slots__ = ("event_type", "job", "signal", "where")

    def __init__(self, event_type: type[Event], where: Callable[[Any], bool] | None,
                 signal: Signal, job: Job) -> None:
        self.event_type = event_type
        self.where = where
        self.signal = signal
        self.job = job
