"""The ``@step`` decorator and the parsed description of one step (``StepSpec``).

``@step`` only records options on the function; the workflow class reads the annotations when its
``class`` statement runs (``Workflow.__init_subclass__``), so forward references to events
declared later in the module resolve.

The input annotation decides how events reach the step:

* ``ev: A`` or ``ev: A | B`` -- one event per call;
* ``evs: list[A]`` -- a fan-in: every ``A`` that descends from one fan-out (a step returning a
  list), in one call, once all of that fan-out's branches have finished;
* ``evs: tuple[A, B]`` -- a join: one ``A`` and one ``B`` from the same fan-out (or, outside a
  fan-out, the next ``A`` and ``B`` to arrive), in that order.

The return annotation lists what the step may emit: ``C``, ``C | D | None``, or ``list[C]`` for a
fan-out. Events sent with ``ctx.send_event`` must appear there too, so the graph is known.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, overload

from ._errors import WorkflowDefinitionError
from ._events import STREAM_ONLY, Event
from ._retry import Retry

__all__ = ["StepOptions", "StepSpec", "parse_step", "step"]

F = TypeVar("F", bound=Callable[..., Any])

#: How a step takes its input: one event, a list gathered from a fan-out, or a join tuple.
InputMode = Literal["one", "list", "tuple"]


@dataclass(frozen=True, slots=True)
class StepOptions:
    """What ``@step(...)`` was given."""

    workers: int = 1
    timeout: float | None = None
    retry: Retry | None = None


@dataclass(frozen=True, slots=True)
class StepSpec:
    """One step, parsed: the function, its options, what it takes and what it may emit."""

    name: str
    func: Callable[..., Any]
    options: StepOptions
    mode: InputMode
    accepts: tuple[type[Event], ...]
    emits: frozenset[type[Event]]
    fans_out: frozenset[type[Event]]
    takes_ctx: bool


@overload
def step(func: F, /) -> F: ...
@overload
def step(*, workers: int = 1, timeout: float | None = None,
         retry: Retry | None = None) -> Callable[[F], F]: ...


def step(func: Any = None, /, *, workers: int = 1, timeout: float | None = None,
         retry: Retry | None = None) -> Any:
    """Mark an ``async def`` method of a ``Workflow`` as a step.

    :raises WorkflowDefinitionError: bad options, or the function is not a coroutine function.
    """
    if workers < 1:
        raise WorkflowDefinitionError(f"@step(workers={workers}): workers must be at least 1")
    if timeout is not None and not timeout > 0:
        raise WorkflowDefinitionError(f"@step(timeout={timeout}): timeout must be positive")
    if retry is not None and not isinstance(retry, Retry):
        raise WorkflowDefinitionError("@step(retry=...) takes a plait.Retry")
    options = StepOptions(workers=workers, timeout=timeout, retry=retry)

    def mark(fn: F) -> F:
        if not inspect.iscoroutinefunction(fn):
            raise WorkflowDefinitionError(
                f"step {getattr(fn, '__name__', fn)!r} must be an 'async def' function"
            )
        fn.__plait_step__ = options  # type: ignore[attr-defined]
        return fn

    if func is None:
        return mark
    return mark(func)


def step_options(obj: object) -> StepOptions | None:
    """The options ``@step`` recorded on ``obj``, or ``None`` if it is not a step."""
    opts = getattr(obj, "__plait_step__", None)
    return opts if isinstance(opts, StepOptions) else None


def _event_class(tp: Any, where: str) -> type[Event]:
    if isinstance(tp, type) and issubclass(tp, Event):
        if issubclass(tp, STREAM_ONLY):
            raise WorkflowDefinitionError(
                f"{where}: {tp.__name__} is a stream-only event; steps cannot take or emit it"
            )
        return tp
    raise WorkflowDefinitionError(f"{where}: {tp!r} is not an Event subclass")


def _union_members(tp: Any) -> tuple[Any, ...]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.get_args(tp)
    return (tp,)


def _parse_input(tp: Any, where: str) -> tuple[InputMode, tuple[type[Event], ...]]:
    origin = typing.get_origin(tp)
    if origin is list:
        (inner,) = typing.get_args(tp) or (None,)
        if inner is None:
            raise WorkflowDefinitionError(f"{where}: list[...] needs an event type")
        return "list", tuple(_event_class(t, where) for t in _union_members(inner))
    if origin is tuple:
        args = typing.get_args(tp)
        if not args or Ellipsis in args:
            raise WorkflowDefinitionError(f"{where}: a join is tuple[A, B, ...] of event types")
        joined = tuple(_event_class(t, where) for t in args)
        if len(set(joined)) != len(joined):
            raise WorkflowDefinitionError(f"{where}: a join names each event type once")
        return "tuple", joined
    return "one", tuple(_event_class(t, where) for t in _union_members(tp))


def _parse_output(tp: Any, where: str) -> tuple[set[type[Event]], set[type[Event]]]:
    emits: set[type[Event]] = set()
    fans_out: set[type[Event]] = set()
    for member in _union_members(tp):
        if member is None or member is type(None):
            continue
        if typing.get_origin(member) is list:
            args = typing.get_args(member)
            if not args:
                raise WorkflowDefinitionError(f"{where}: list[...] needs an event type")
            for inner in _union_members(args[0]):
                fans_out.add(_event_class(inner, where))
            continue
        emits.add(_event_class(member, where))
    return emits, fans_out


def parse_step(name: str, func: Callable[..., Any], options: StepOptions,
               localns: dict[str, Any]) -> StepSpec:
    """Read a step's annotations.

    :raises WorkflowDefinitionError: an unannotated or malformed signature; names the step.
    """
    where = f"step {name!r}"
    params = list(inspect.signature(func).parameters.values())
    if len(params) not in (2, 3) or any(
        p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params
    ):
        raise WorkflowDefinitionError(
            f"{where}: the signature must be (self, ev: EventType[, ctx: Context])"
        )
    try:
        hints = typing.get_type_hints(func, globalns=getattr(func, "__globals__", None),
                                      localns=localns)
    except NameError as exc:
        raise WorkflowDefinitionError(f"{where}: cannot resolve an annotation: {exc}") from exc
    ev_param = params[1].name
    if ev_param not in hints:
        raise WorkflowDefinitionError(
            f"{where}: parameter {ev_param!r} has no event type annotation"
        )
    if "return" not in hints:
        raise WorkflowDefinitionError(
            f"{where}: no return annotation (use '-> SomeEvent', '-> list[SomeEvent]' or "
            "'-> None')"
        )
    mode, accepts = _parse_input(hints[ev_param], f"{where}, parameter {ev_param!r}")
    emits, fans_out = _parse_output(hints["return"], f"{where}, return annotation")
    return StepSpec(name=name, func=func, options=options, mode=mode, accepts=accepts,
                    emits=frozenset(emits), fans_out=frozenset(fans_out),
                    takes_ctx=len(params) == 3)
