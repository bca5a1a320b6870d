"""Events: the typed messages steps consume and emit.

Events are ``msgspec.Struct`` subclasses so that building one costs about as much as a tuple and
checkpoints encode them to msgpack without a schema of our own. Every field is keyword-only
(``Mid(v=1)``): that lets ``StopEvent`` give ``result`` a default while a custom stop event adds
required fields after it, which positional structs would forbid.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import StructMeta
from typing_extensions import dataclass_transform

__all__ = [
    "Event",
    "InputRequired",
    "StartEvent",
    "StepFinished",
    "StepStarted",
    "StopEvent",
    "event_type_name",
]


class _EventMeta(StructMeta):
    """Make every event class keyword-only unless it says otherwise."""

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any],
                **kwargs: Any) -> _EventMeta:
        kwargs.setdefault("kw_only", True)
        return super().__new__(mcls, name, bases, namespace, **kwargs)


@dataclass_transform(kw_only_default=True, field_specifiers=(msgspec.field,))
class Event(msgspec.Struct, metaclass=_EventMeta):
    """Base of every event; subclass it and declare fields (``class Query(Event): text: str``)."""


class StartEvent(Event):
    """Carries a run's inputs; a workflow's start event is the ``StartEvent`` subclass it consumes."""


class StopEvent(Event):
    """Ends the run; ``run()`` returns ``result`` (or the event itself for a subclass)."""

    result: Any = None


# --- events only the caller sees (the run's stream), never routed to steps ---------------------


class StepStarted(Event):
    """A step began an attempt on one event (written to the stream of ``Workflow.start``)."""

    step: str
    attempt: int


class StepFinished(Event):
    """A step attempt ended; ``error`` is the exception's type and message when it raised."""

    step: str
    attempt: int
    error: str | None = None


class InputRequired(Event):
    """A step is paused in ``ctx.wait_for``: answer it with ``await run.send(event)``."""

    step: str
    event_type: str
    waiter_id: str
    prompt: Any = None


#: Stream-only events: validation ignores them and no step may consume them.
STREAM_ONLY: tuple[type[Event], ...] = (StepStarted, StepFinished, InputRequired)


def event_type_name(cls: type) -> str:
    """The stable name an event type is saved under in checkpoints (``module:QualName``)."""
    return f"{cls.__module__}:{cls.__qualname__}"
