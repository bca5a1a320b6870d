"""Per-step-execution context: the run's state, content and the calls a step makes on its run.

Contract other parts rely on: ``ctx.run_id``, ``ctx.handles`` (a ``HandleScope``) and
``ctx.store`` (the run's ``ContentStore`` or ``None``). Each step execution gets its own
``Context`` (cheap: a few slots) so that ``attempt`` and ``idempotency_key`` describe that
execution, while ``state``, ``store`` and ``handles`` are the run's and shared by all its steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic

import anyio
from typing_extensions import TypeVar

from ._errors import PlaitError
from ._events import Event, StartEvent
from ._scope import HandleScope
from ._store import ContentStore

if TYPE_CHECKING:
    from ._jobs import Job
    from ._runtime import Runtime
    from ._workflow import Workflow

__all__ = ["Context"]

StateT = TypeVar("StateT", default=Any)
E = TypeVar("E", bound=Event)
R = TypeVar("R")


class Context(Generic[StateT]):
    """What a step can see and do during one run; ``Context[MyState]`` types ``ctx.state``."""

    __slots__ = ("_job", "_run", "handles", "run_id", "store")

    def __init__(self, *, run_id: str, store: ContentStore | None = None,
                 handles: HandleScope | None = None) -> None:
        self.run_id = run_id
        self.store = store
        self.handles = handles if handles is not None else HandleScope()
        self._run: Runtime | None = None
        self._job: Job | None = None

    @classmethod
    def _bind(cls, run: Runtime, job: Job) -> Context[Any]:
        ctx: Context[Any] = cls.__new__(cls)
        ctx.run_id = run.run_id
        ctx.store = run.store
        ctx.handles = run.handles
        ctx._run = run
        ctx._job = job
        return ctx

    def _runtime(self) -> Runtime:
        if self._run is None:
            raise PlaitError("this Context is not attached to a running workflow")
        return self._run

    @property
    def state(self) -> StateT:
        """The run's typed state (the workflow's ``state_type``; a dict when none is declared).

        :raises PlaitError: the context is not attached to a run.
        """
        return self._runtime().state  # type: ignore[no-any-return]

    @property
    def step_name(self) -> str:
        """Name of the step this context belongs to ("" outside a run)."""
        return self._job.step.name if self._job is not None else ""

    @property
    def attempt(self) -> int:
        """1 on the first attempt at this event; higher on a retry or a re-run after resume."""
        return self._job.attempt if self._job is not None else 1

    @property
    def idempotency_key(self) -> str:
        """Stable across retries and resumes of this step execution: use it for side effects."""
        if self._job is None:
            return f"{self.run_id}/-/0"
        return f"{self.run_id}/{self._job.step.name}/{self._job.id}"

    def send_event(self, ev: Event) -> None:
        """Emit ``ev`` now, while the step keeps running (declare its type in the step's return
        annotation).

        :raises WorkflowDefinitionError: no step takes this event type.
        """
        self._runtime().send_event(self._job, ev)

    def write_to_stream(self, ev: Event) -> None:
        """Send ``ev`` to the caller's ``run.events()`` stream (dropped if nobody streams)."""
        self._runtime().write_to_stream(ev)

    async def wait_for(self, event_type: type[E], *, where: Callable[[E], bool] | None = None,
                       timeout: float | None = None, prompt: Any = None) -> E:
        """Pause this step until the caller sends an ``event_type`` (``await run.send(ev)``).

        The step resumes right here; nothing before the wait runs again. The stream shows an
        ``InputRequired`` event (with ``prompt``) while it waits. ``where`` filters candidates.
        After a process restart the step re-runs and earlier answers are replayed in order.

        :raises TimeoutError: ``timeout`` seconds passed without an answer.
        :raises WorkflowCancelled: the run ended while waiting.
        """
        run = self._runtime()
        assert self._job is not None
        return await run.wait_for(self._job, event_type, where, timeout, prompt)  # type: ignore

    async def sleep(self, seconds: float) -> None:
        """Pause this step for ``seconds`` without holding up other steps (cancellable).

        With a checkpoint store the wake-up time is saved when the sleep starts, so a step
        re-run after a resume sleeps only what is left (nothing once it has passed).

        :raises ValueError: ``seconds`` is negative or not finite.
        """
        if not seconds >= 0 or math.isinf(seconds):
            raise ValueError(f"sleep takes a finite number of seconds >= 0, not {seconds!r}")
        if self._run is None or self._job is None:
            await anyio.sleep(seconds)
            return
        await self._run.sleep(self._job, seconds)

    async def run_workflow(self, workflow: Workflow[Any, R],
                           start_event: StartEvent | None = None, /, *, forward: bool = True,
                           **fields: Any) -> R:
        """Run a child workflow inside this step and return its result.

        The child shares this run's content store and handles; with ``forward`` the events it
        writes to its stream appear on this run's stream. Cancelling this step cancels it.

        :raises StepFailed, StepTimeout, WorkflowTimeout: as the child's ``run()`` does.
        """
        run = self._runtime()
        result: R = await workflow._run_child(run, start_event, forward=forward, fields=fields)
        return result
