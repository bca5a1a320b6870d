"""``OTelHooks``: the engine's run hooks turned into workflow and step spans.

The engine calls the hooks in the task that runs each step body:

* ``run_started`` opens ``invoke_workflow {name}`` (INTERNAL) under whatever span is current, so
  a child workflow started from a step nests under that step;
* ``step_started`` opens ``step {name}`` as a child of the run span, **linked** to the spans of
  the step executions whose events it consumes (a fan-in step gets one link per origin), with
  the attempt number, and makes it current (with the run and step bound for log lines) until
  ``step_finished``. A step body is a coroutine, not a generator, so nothing stays current
  across a ``yield``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import Link, Span

from . import _runctx
from . import _semconv as sc
from ._tracing import Telemetry, error_type, monotonic, record_error

__all__ = ["OTelHooks"]

_NO_LINKS: Final[list[Link]] = []


class _Run:
    __slots__ = ("context", "info", "span", "workflow")

    def __init__(self, span: Span, workflow: str, run_id: str, telemetry: Telemetry) -> None:
        self.span = span
        self.workflow = workflow
        self.context = trace.set_span_in_context(span)
        self.info = _runctx.RunInfo(run_id, workflow, telemetry=telemetry)


class _Step:
    __slots__ = ("attach", "bind", "name", "run", "span", "start")

    def __init__(self, run: _Run, name: str, span: Span, start: float,
                 attach: contextvars.Token[Any], bind: contextvars.Token[Any]) -> None:
        self.run = run
        self.name = name
        self.span = span
        self.start = start
        self.attach = attach
        self.bind = bind


class OTelHooks:
    """Run hooks that trace workflow runs and step executions with OpenTelemetry.

    Pass ``telemetry`` (or ``tracer_provider`` / ``meter_provider``, defaulting to the globals);
    plait never installs a provider itself.
    """

    def __init__(self, telemetry: Telemetry | None = None, *,
                 tracer_provider: trace.TracerProvider | None = None,
                 meter_provider: metrics.MeterProvider | None = None) -> None:
        self.telemetry = telemetry or Telemetry(tracer_provider=tracer_provider,
                                                meter_provider=meter_provider)

    def run_started(self, workflow_name: str, run_id: str) -> _Run:
        """Open the run's ``invoke_workflow`` span (not made current)."""
        span = self.telemetry.start_span(
            f"{sc.OP_INVOKE_WORKFLOW} {workflow_name}",
            attributes={sc.OPERATION_NAME: sc.OP_INVOKE_WORKFLOW,
                        sc.WORKFLOW_NAME: workflow_name, sc.RUN_ID: run_id})
        return _Run(span, workflow_name, run_id, self.telemetry)

    def run_finished(self, token: object, error: BaseException | None) -> None:
        """Close the run span, failed when ``error`` is given."""
        if isinstance(token, _Run):
            Telemetry.end_span(token.span, error)

    def step_started(self, run_token: object, step_name: str, attempt: int,
                     origins: Iterable[object] = ()) -> _Step | None:
        """Open ``step {step_name}`` under the run, linked to its origins, and make it current."""
        if not isinstance(run_token, _Run):
            return None
        links = [Link(o.span.get_span_context()) for o in origins if isinstance(o, _Step)] \
            if origins else _NO_LINKS
        span = self.telemetry.start_span(
            f"step {step_name}", parent=run_token.context, links=links,
            attributes={sc.STEP_NAME: step_name, sc.STEP_ATTEMPT: attempt,
                        sc.WORKFLOW_NAME: run_token.workflow,
                        sc.RUN_ID: run_token.info.run_id})
        attach = otel_context.attach(trace.set_span_in_context(span))
        bind = _runctx.bind(run_token.info._replace(step=step_name, attempt=attempt))
        return _Step(run_token, step_name, span, monotonic(), attach, bind)

    def step_finished(self, token: object, error: BaseException | None) -> None:
        """Close the step span, restore the context and record the step's duration."""
        if not isinstance(token, _Step):
            return
        elapsed = monotonic() - token.start
        _runctx.unbind(token.bind)
        _detach(token.attach)
        attributes: dict[str, str] = {sc.WORKFLOW_NAME: token.run.workflow,
                                      sc.STEP_NAME: token.name}
        if error is not None:
            attributes[sc.ERROR_TYPE] = error_type(error)
            record_error(token.span, error)
        token.span.end()
        self.telemetry.record_step_duration(elapsed, attributes)


def _detach(token: contextvars.Token[Any]) -> None:
    # OpenTelemetry logs "Failed to detach context" when a token is reset from another context;
    # if the engine ever finishes a step elsewhere, skip silently: the other context was never
    # changed by us.
    try:  # noqa: SIM105 - try/except is cheaper than suppress() on this per-step path
        token.var.reset(token)
    except (ValueError, RuntimeError):
        pass
