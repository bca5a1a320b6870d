"""The telemetry seam: callbacks the runtime makes around runs and step executions.

Subclass ``RunHooks`` and pass an instance as ``Workflow(hooks=...)`` or ``run(..., hooks=...)``.
Without hooks the runtime does not call anything and does not record origins, so the seam costs
nothing when unused.

Tokens are opaque to the runtime: whatever ``run_started`` / ``step_started`` return is handed
back to the matching ``*_finished`` call and, for steps, to the ``step_started`` of every step
execution that consumes an event this one emitted (``origins``). An OpenTelemetry
implementation returns spans and links a step's span to the spans in ``origins``.

``step_started`` and ``step_finished`` run in the task that runs the step body, immediately
before and after it, so an implementation may make a span current with ``contextvars`` in
``step_started`` and restore the previous context in ``step_finished``. Hooks must not raise;
whatever they raise propagates as a failure of the run.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["RunHooks"]


class RunHooks:
    """No-op base: override the callbacks you need."""

    def run_started(self, workflow_name: str, run_id: str) -> object:
        """Called once when a run (or a resumed run) begins; returns the run token."""
        return None

    def run_finished(self, run_token: object, error: BaseException | None) -> None:
        """Called once when the run ends; ``error`` is ``None`` on success."""

    def step_started(self, run_token: object, step_name: str, attempt: int,
                     origins: Sequence[object]) -> object:
        """Called before each step attempt; ``origins`` are the tokens of the executions that
        emitted the input event(s): several for a fan-in, empty for events from outside."""
        return None

    def step_finished(self, step_token: object, error: BaseException | None) -> None:
        """Called after each step attempt with the exception it raised, or ``None``."""
