"""``Workflow``: a class of ``@step`` methods, validated when the class statement runs.

Steps are collected along the MRO, so a subclass inherits its parents' steps, replaces one by
defining a method of the same name, and adds new ones; the subclass's graph is validated on its
own. ``Workflow[In, Out]`` types ``run()``: ``In`` is the start event, ``Out`` what ``run()``
returns (``StopEvent.result``, or the custom stop event itself).

A workflow instance holds configuration only. Every run gets its own runtime, state and handle
scope, so one instance can serve many concurrent runs.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable
from typing import Any, ClassVar, Generic

import msgspec
from typing_extensions import TypeVar

from ._checkpoint import CheckpointStore, decode_checkpoint, decode_event
from ._errors import CheckpointError, WorkflowDefinitionError
from ._events import Event, StartEvent, StopEvent
from ._graph import Graph
from ._hooks import RunHooks
from ._run import RunStarter
from ._runtime import Runtime
from ._scope import HandleScope
from ._step import StepSpec, parse_step, step_options
from ._store import ContentStore

__all__ = ["Workflow"]

InT = TypeVar("InT", bound=StartEvent, default=StartEvent)
OutT = TypeVar("OutT", default=Any)
W = TypeVar("W", bound="Workflow[Any, Any]")


class _Unset:
    """Marks an argument that was not given (``None`` means "explicitly no timeout")."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()

_RUN_PREFIX = os.urandom(6).hex()
_run_numbers = itertools.count(1)


def _new_run_id() -> str:
    # A per-process random prefix plus a counter: unique across processes, ~10x cheaper than uuid4.
    return f"{_RUN_PREFIX}-{next(_run_numbers)}"


def _class_locals() -> dict[str, Any]:
    """Names visible where the ``class`` statement runs (events defined inside a function)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name == "__init_subclass__":
        frame = frame.f_back  # type: ignore[assignment]
    return dict(frame.f_locals) if frame is not None else {}


class _Resume:
    """``Workflow.resume`` works on the class (a default instance) or on an instance."""

    def __get__(self, obj: Any, owner: type[Any]) -> Callable[..., RunStarter[Any]]:
        target = obj if obj is not None else owner()
        return target._resume  # type: ignore[no-any-return]


class Workflow(Generic[InT, OutT]):
    """Base class of workflows: subclass it and add ``@step`` methods.

    Class attributes: ``state_type`` (a msgspec Struct or pydantic model class, instantiated with
    no arguments for each run; ``ctx.state`` is that instance) and ``timeout`` (seconds for a
    whole run; ``None`` for no limit). Pass ``abstract=True`` in the class statement for a base
    class that is not a complete graph.
    """

    state_type: ClassVar[type[Any] | None] = None
    timeout: float | None = None
    __plait_graph__: ClassVar[Graph | None] = None
    __plait_specs__: ClassVar[dict[str, StepSpec]] = {}

    def __init_subclass__(cls, *, abstract: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found: dict[str, tuple[type, Any]] = {}
        for klass in reversed(cls.__mro__):
            for name, value in vars(klass).items():
                if step_options(value) is not None:
                    found[name] = (klass, value)
                elif name in found:
                    del found[name]  # overridden by something that is not a step
        cls.__plait_specs__ = {}
        cls.__plait_graph__ = None
        if not found:
            return
        localns: dict[str, Any] | None = None
        specs: dict[str, StepSpec] = {}
        for name, (owner, func) in found.items():
            inherited = owner.__dict__.get("__plait_specs__", {}).get(name) if owner is not cls \
                else None
            if inherited is not None and inherited.func is func:
                specs[name] = inherited
                continue
            if localns is None:
                localns = {**_class_locals(), **vars(cls), cls.__name__: cls}
            options = step_options(func)
            assert options is not None
            specs[name] = parse_step(name, func, options, localns)
        cls.__plait_specs__ = specs
        if not abstract:
            cls.__plait_graph__ = Graph(cls.__qualname__, specs)

    def __init__(self, *, timeout: float | None = UNSET, hooks: RunHooks | None = None,
                 store: ContentStore | None = None, handles: HandleScope | None = None,
                 checkpoints: CheckpointStore | None = None, stream_buffer: int = 1024) -> None:
        if timeout is not UNSET:
            self.timeout = timeout
        self.hooks = hooks
        self.store = store
        self.handles = handles
        self.checkpoints = checkpoints
        self.stream_buffer = stream_buffer

    # --- introspection -------------------------------------------------------------------------

    @classmethod
    def graph(cls) -> Graph:
        """The validated step graph.

        :raises WorkflowDefinitionError: the class is abstract or has no steps.
        """
        graph = cls.__plait_graph__
        if graph is None:
            raise WorkflowDefinitionError(f"{cls.__qualname__} has no runnable step graph "
                                          "(no steps, or declared abstract)")
        return graph

    @classmethod
    def mermaid(cls) -> str:
        """The step/event graph as a Mermaid flowchart."""
        return cls.graph().mermaid()

    # --- running -------------------------------------------------------------------------------

    def _start_event(self, graph: Graph, start_event: Event | None,
                     fields: dict[str, Any]) -> Event:
        if start_event is None:
            try:
                # convert() checks field types too (a constructor call does not); types msgspec
                # cannot check (arbitrary classes) fall back to the plain constructor.
                unknown = sorted(set(fields) - set(graph.start_type.__struct_fields__))
                if unknown:
                    raise TypeError(f"unexpected field(s) {', '.join(map(repr, unknown))}")
                try:
                    event: Event = msgspec.convert(fields, graph.start_type)
                except msgspec.ValidationError as exc:
                    raise TypeError(str(exc)) from None
                except TypeError:
                    event = graph.start_type(**fields)
                return event
            except TypeError as exc:
                if isinstance(exc, WorkflowDefinitionError):
                    raise
                raise WorkflowDefinitionError(
                    f"{graph.workflow}: cannot build {graph.start_type.__name__} from the "
                    f"given arguments: {exc}"
                ) from exc
        if fields:
            raise WorkflowDefinitionError("pass either a start event or its fields, not both")
        if not isinstance(start_event, StartEvent) or graph.route(type(start_event)) is None:
            raise WorkflowDefinitionError(
                f"{graph.workflow} does not take {type(start_event).__name__} as a start event"
            )
        return start_event

    def _initial_state(self, state: Any) -> Any:
        if state is not None:
            return state
        state_type = type(self).state_type
        return state_type() if state_type is not None else {}

    def _runtime(self, *, run_id: str | None, state: Any, store: ContentStore | None,
                 handles: HandleScope | None, hooks: RunHooks | None,
                 checkpoints: CheckpointStore | None, timeout: float | None,
                 streaming: bool) -> Runtime:
        graph = type(self).graph()
        if handles is None:
            handles = HandleScope(self.handles) if self.handles is not None else HandleScope()
        return Runtime(
            self, graph, run_id=run_id or _new_run_id(), state=self._initial_state(state),
            store=store if store is not None else self.store, handles=handles,
            hooks=hooks if hooks is not None else self.hooks,
            checkpoints=checkpoints if checkpoints is not None else self.checkpoints,
            timeout=self.timeout if timeout is UNSET else timeout,
            stream_limit=self.stream_buffer if streaming else None,
        )

    async def run(self, start_event: InT | None = None, /, *, run_id: str | None = None,
                  state: Any = None, store: ContentStore | None = None,
                  handles: HandleScope | None = None, hooks: RunHooks | None = None,
                  checkpoints: CheckpointStore | None = None, timeout: float | None = UNSET,
                  **fields: Any) -> OutT:
        """Run to the end and return ``StopEvent.result`` (or the custom stop event).

        Keyword arguments other than the options build the start event.

        :raises StepFailed: a step raised (original as ``__cause__``) after its retries.
        :raises StepTimeout: a step timed out on every attempt.
        :raises WorkflowTimeout: the run exceeded its ``timeout``.
        :raises WorkflowStalled: nothing left to run and no stop event.
        :raises WorkflowDefinitionError: the start event does not fit this workflow.
        """
        rt = self._runtime(run_id=run_id, state=state, store=store, handles=handles, hooks=hooks,
                           checkpoints=checkpoints, timeout=timeout, streaming=False)
        await rt.execute(self._start_event(rt.graph, start_event, fields))
        return rt.result()  # type: ignore[no-any-return]

    def start(self, start_event: InT | None = None, /, *, run_id: str | None = None,
              state: Any = None, store: ContentStore | None = None,
              handles: HandleScope | None = None, hooks: RunHooks | None = None,
              checkpoints: CheckpointStore | None = None, timeout: float | None = UNSET,
              **fields: Any) -> RunStarter[OutT]:
        """Start a run to stream: ``async with wf.start(...) as run:``.

        Leaving the block before the run ends cancels it (with a checkpoint store it stays
        resumable from its last checkpoint).
        """
        rt = self._runtime(run_id=run_id, state=state, store=store, handles=handles, hooks=hooks,
                           checkpoints=checkpoints, timeout=timeout, streaming=True)
        ev = self._start_event(rt.graph, start_event, fields)
        return RunStarter(lambda: _ready(rt, ev))

    resume = _Resume()

    def _resume(self, run_id: str, *, store: CheckpointStore | None = None,
                content_store: ContentStore | None = None, handles: HandleScope | None = None,
                hooks: RunHooks | None = None, timeout: float | None = UNSET
                ) -> RunStarter[OutT]:
        """Continue a checkpointed run: ``await wf.resume(run_id, store=...)`` returns its
        result; ``async with wf.resume(...) as run:`` streams it. Completed steps do not run
        again; steps that were in flight run again with a higher ``ctx.attempt``.

        :raises RunNotFound: the store has no checkpoint for ``run_id``.
        :raises CheckpointError: the checkpoint belongs to another workflow, or the run failed.
        """
        checkpoints = store if store is not None else self.checkpoints
        if checkpoints is None:
            raise CheckpointError("resume needs a checkpoint store (store=...)")

        async def prepare() -> tuple[Runtime, Event | None]:
            cp = decode_checkpoint(await checkpoints.load(run_id))
            graph = type(self).graph()
            if cp.workflow != graph.workflow:
                raise CheckpointError(
                    f"run {run_id} belongs to workflow {cp.workflow!r}, not {graph.workflow!r}"
                )
            if cp.status == "failed":
                raise CheckpointError(f"run {run_id} failed ({cp.error}); it cannot be resumed")
            state = None
            if cp.state is not None:
                from ._checkpoint import decode_state

                state = decode_state(cp.state, type(self).state_type)
            rt = self._runtime(run_id=run_id, state=state, store=content_store, handles=handles,
                               hooks=hooks, checkpoints=checkpoints, timeout=timeout,
                               streaming=True)
            if cp.status == "done":
                rt.stop_event = (decode_event(cp.result, dict(graph.types))
                                 if cp.result is not None else StopEvent())
                rt.finished = rt.closed = True
            else:
                rt.restore(cp)
            return rt, None

        return RunStarter(prepare)

    async def _run_child(self, parent: Runtime, start_event: Event | None, *, forward: bool,
                         fields: dict[str, Any]) -> Any:
        graph = type(self).graph()
        rt = Runtime(
            self, graph, run_id=_new_run_id(), state=self._initial_state(None),
            store=parent.store, handles=parent.handles, hooks=parent.hooks, checkpoints=None,
            timeout=self.timeout, stream_limit=None,
            forward_to=parent.user_stream if forward else None,
        )
        # Linked both ways so the caller's run.send() reaches a child waiting in wait_for, and
        # the child's InputRequired reaches the caller's stream.
        rt.parent = parent
        parent.children.append(rt)
        try:
            await rt.execute(self._start_event(graph, start_event, fields))
        finally:
            parent.children.remove(rt)
        return rt.result()


async def _ready(rt: Runtime, ev: Event) -> tuple[Runtime, Event | None]:
    return rt, ev

