"""Which run and step the current task is working for, for log lines and child spans.

One context variable holds ``(run, step, attempt)``: the run's record is built once per run, so
binding a step costs one small tuple, one ``set`` and one ``reset``; tasks started inside a step
(tool calls, child workflows) inherit it with the rest of the context.
"""

from __future__ import annotations

import contextvars
from typing import Any, NamedTuple, TypeAlias

__all__ = ["Bound", "RunInfo", "bind", "current", "unbind"]


class RunInfo(NamedTuple):
    """The run that log lines and model/tool spans belong to."""

    run_id: str
    workflow: str
    telemetry: Any = None  # the run's Telemetry, so model and tool spans use the same providers


Bound: TypeAlias = tuple[RunInfo, str, int]
"""What is bound while a step runs: the run, the step's name, the attempt number."""

_current: contextvars.ContextVar[Bound | None] = contextvars.ContextVar(
    "plait_run_info", default=None
)


def current() -> Bound | None:
    """The run, step and attempt bound in this context, if any."""
    return _current.get()


def bind(bound: Bound) -> contextvars.Token[Bound | None]:
    """Bind ``(run, step, attempt)`` to the current context; pass the token to ``unbind``."""
    return _current.set(bound)


def unbind(token: contextvars.Token[Bound | None]) -> None:
    """Undo ``bind``; a token from another context (the engine moved tasks) is ignored."""
    try:  # noqa: SIM105 - try/except is cheaper than suppress() on this per-step path
        _current.reset(token)
    except (ValueError, RuntimeError):
        # Created in another Context, or already used: nothing of ours to restore here.
        pass
