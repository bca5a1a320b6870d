"""Which run and step the current task is working for, for log lines and child spans.

One context variable holds an immutable record, so binding a step is one ``set`` and one
``reset``; tasks started inside a step (tool calls, child workflows) inherit it with the rest of
the context.
"""

from __future__ import annotations

import contextvars
from typing import Any, NamedTuple

__all__ = ["RunInfo", "bind", "current", "unbind"]


class RunInfo(NamedTuple):
    """The run (and step, when inside one) that log lines belong to."""

    run_id: str
    workflow: str
    step: str | None = None
    attempt: int | None = None
    telemetry: Any = None  # the run's Telemetry, so model and tool spans use the same providers


_current: contextvars.ContextVar[RunInfo | None] = contextvars.ContextVar(
    "plait_run_info", default=None
)


def current() -> RunInfo | None:
    """The run record bound in this context, if any."""
    return _current.get()


def bind(info: RunInfo) -> contextvars.Token[RunInfo | None]:
    """Bind ``info`` to the current context; pass the token to ``unbind``."""
    return _current.set(info)


def unbind(token: contextvars.Token[RunInfo | None]) -> None:
    """Undo ``bind``; a token from another context (the engine moved tasks) is ignored."""
    try:  # noqa: SIM105 - try/except is cheaper than suppress() on this per-step path
        _current.reset(token)
    except (ValueError, RuntimeError):
        # Created in another Context, or already used: nothing of ours to restore here.
        pass
