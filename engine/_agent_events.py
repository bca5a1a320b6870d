"""The events of the agent turn, public so a subclass can add or replace steps between them.

A turn flows ``AgentInput | ToolsDispatched`` → prepare → ``Prepared`` → rehost →
``Rehosted`` → serialize → ``Serialized`` → call_model → ``ModelResponded`` → resolve →
``ToolCallsResolved`` (or ``StopEvent`` with an ``AgentResult``) → dispatch_tools →
``ToolsDispatched`` → prepare again. The ``Agent*`` / ``Tool*`` / ``Turn*`` events below the line
only go to the caller's stream (``run.events()``).
"""

from __future__ import annotations

import msgspec

from ._events import Event, StartEvent
from ._messages import Message, ModelReply, ModelRequest, ToolCall, ToolResult, Usage
from ._parts import ContentPart
from ._progress import TransferProgress
from ._rehost import MediaMove

__all__ = [
    "AgentInput",
    "AgentResult",
    "AgentTextDelta",
    "MediaRouted",
    "ModelResponded",
    "Prepared",
    "Rehosted",
    "Serialized",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolCallsResolved",
    "ToolsDispatched",
    "TransferProgressed",
    "TurnFinished",
    "TurnStarted",
]


class AgentInput(StartEvent):
    """A run's input: the new user parts (strings are text), earlier conversation, and an
    optional model switch.

    ``history`` may come from another agent on another provider: its handles stay valid as long
    as the content is in a store this agent can read.
    """

    prompt: list[str | ContentPart] = msgspec.field(default_factory=list)
    history: list[Message] = msgspec.field(default_factory=list)
    model: str | None = None


class Prepared(Event):
    """The conversation to send this turn, in canonical form, and the system text."""

    turn: int
    model: str
    messages: list[Message]
    system: str | None = None


class Rehosted(Event):
    """``Prepared`` with every media part's source reachable by the turn's provider."""

    turn: int
    model: str
    messages: list[Message]
    system: str | None = None


class Serialized(Event):
    """The request for the provider (``model`` is ``provider:model``)."""

    turn: int
    model: str
    request: ModelRequest


class ModelResponded(Event):
    """The model's reply to one turn."""

    turn: int
    model: str
    reply: ModelReply


class ToolCallsResolved(Event):
    """Tool calls ready to run (arguments valid, handles visible), and the ones refused.

    ``rejected`` already holds the error results the model will see (unknown tool, bad JSON,
    schema violations, unknown or wrong-kind handles); ``calls`` is every call of the turn in
    the model's order, ``runnable`` the ids of those that passed.
    """

    turn: int
    calls: list[ToolCall]
    runnable: list[str]
    rejected: list[ToolResult] = msgspec.field(default_factory=list)


class ToolsDispatched(Event):
    """The results of every call of a turn, in the order the model made the calls."""

    turn: int
    results: list[ToolResult]


class AgentResult(msgspec.Struct, kw_only=True):
    """What ``Agent.run`` returns: the answer, the whole conversation, usage and cost.

    ``cost`` is in US dollars when prices are known for every model used, else ``None``;
    ``finish_reason`` is the model's, or ``"max_turns"`` when the turn limit stopped the run.
    """

    output: str
    messages: list[Message]
    usage: Usage
    turns: int
    model: str
    cost: float | None = None
    finish_reason: str | None = None


# --- stream-only events ---------------------------------------------------------------------


class TurnStarted(Event):
    """A model turn begins (the model is ``provider:model``)."""

    turn: int
    model: str


class AgentTextDelta(Event):
    """A fragment of the model's answer, as it streams."""

    turn: int
    text: str


class ToolCallStarted(Event):
    """A tool call is about to run."""

    turn: int
    call: ToolCall


class ToolCallFinished(Event):
    """A tool call ended; ``error`` names the failure the model was told about, if any."""

    turn: int
    result: ToolResult
    seconds: float
    error: str | None = None


class MediaRouted(Event):
    """Where one media part went on this turn's wire (inline, file id, URL, uploaded...)."""

    turn: int
    move: MediaMove


class TransferProgressed(Event):
    """Progress of a long upload while rehosting."""

    progress: TransferProgress


class TurnFinished(Event):
    """A model turn ended: the reply's usage and why the model stopped."""

    turn: int
    model: str
    usage: Usage
    finish_reason: str | None = None
