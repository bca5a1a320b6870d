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
import time
from collections.abc import Sequence
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import Link, Span, SpanKind

from .._hooks import RunHooks
from . import _runctx
from . import _semconv as sc
from ._tracing import Telemetry, error_type, record_error

__all__ = ["OTelHooks", "register_agent_workflow"]

# Workflow names whose runs are agent invocations (``AgentWorkflow`` and its subclasses).
_AGENT_WORKFLOWS: set[str] = set()


def register_agent_workflow(name: str) -> None:
    """Trace runs of the workflow called ``name`` as ``invoke_agent {name}``."""
    _AGENT_WORKFLOWS.add(name)

_INTERNAL: Final = SpanKind.INTERNAL
_attach = otel_context.attach
_clock = time.perf_counter


class _Run:
    __slots__ = ("context", "info", "recording", "span", "start", "workflow")

    def __init__(self, span: Span, workflow: str, run_id: str, telemetry: Telemetry) -> None:
        self.span = span
        self.workflow = workflow
        self.info = _runctx.RunInfo(run_id, workflow, telemetry)
        self.context = trace.set_span_in_context(span)
        # A run that is not sampled (or has no SDK behind it) gets no step spans either: steps
        # then only bind the log context, which keeps untraced runs near free.
        self.recording = span.is_recording()
        self.start = _clock()


class _Step:
    __slots__ = ("attach", "bind", "name", "run", "span", "span_context", "start")

    def __init__(self, run: _Run, name: str, span: Span | None,
                 attach: contextvars.Token[Any] | None,
                 bind: contextvars.Token[_runctx.Bound | None]) -> None:
        self.run = run
        self.name = name
        self.span = span
        self.span_context = span.get_span_context() if span is not None else None
        self.attach = attach
        self.bind = bind
        self.start = _clock()


class OTelHooks(RunHooks):
    """Run hooks that trace workflow runs and step executions with OpenTelemetry.

    Pass ``telemetry`` (or ``tracer_provider`` / ``meter_provider``, defaulting to the globals);
    plait never installs a provider itself. ``step_metrics=False`` skips the step-duration
    histogram (an SDK histogram costs about as much as a span).
    """

    def __init__(self, telemetry: Telemetry | None = None, *,
                 tracer_provider: trace.TracerProvider | None = None,
                 meter_provider: metrics.MeterProvider | None = None,
                 step_metrics: bool = True) -> None:
        self.telemetry = telemetry or Telemetry(tracer_provider=tracer_provider,
                                                meter_provider=meter_provider)
        self._step_duration = self.telemetry.step_duration if step_metrics else None
        self._start_span = self.telemetry.tracer.start_span
        # Per step name / attempt: span name and attributes, built once and reused (the SDK
        # copies attributes, so sharing the dict is safe).
        self._labels: dict[tuple[str, int], tuple[str, dict[str, Any]]] = {}
        self._metric_attributes: dict[tuple[str, str], dict[str, str]] = {}

    def run_started(self, workflow_name: str, run_id: str) -> _Run:
        """Open the run's ``invoke_workflow`` span (``invoke_agent`` for an agent workflow)."""
        if workflow_name in _AGENT_WORKFLOWS:
            name = f"{sc.OP_INVOKE_AGENT} {workflow_name}"
            attributes = {sc.OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.AGENT_NAME: workflow_name,
                          sc.RUN_ID: run_id}
        else:
            name = f"{sc.OP_INVOKE_WORKFLOW} {workflow_name}"
            attributes = {sc.OPERATION_NAME: sc.OP_INVOKE_WORKFLOW,
                          sc.WORKFLOW_NAME: workflow_name, sc.RUN_ID: run_id}
        span = self.telemetry.start_span(name, attributes=attributes)
        return _Run(span, workflow_name, run_id, self.telemetry)

    def run_finished(self, token: object, error: BaseException | None) -> None:
        """Close the run span, failed when ``error`` is given."""
        if not isinstance(token, _Run):
            return
        Telemetry.end_span(token.span, error)
        histogram = self.telemetry.workflow_duration
        if histogram is not None:
            attributes = {sc.WORKFLOW_NAME: token.workflow}
            if error is not None:
                attributes[sc.ERROR_TYPE] = error_type(error)
            histogram.record(_clock() - token.start, attributes)

    def step_started(self, run_token: object, step_name: str, attempt: int,
                     origins: Sequence[object] = ()) -> _Step | None:
        """Open ``step {step_name}`` under the run, linked to its origins, and make it current."""
        if run_token.__class__ is not _Run:
            return None
        run: _Run = run_token
        bind = _runctx.bind((run.info, step_name, attempt))
        if not run.recording:
            return _Step(run, step_name, None, None, bind)
        label = self._labels.get((step_name, attempt))
        if label is None:
            label = self._labels[step_name, attempt] = (
                f"step {step_name}", {sc.STEP_NAME: step_name, sc.STEP_ATTEMPT: attempt})
        links = [Link(o.span_context) for o in origins
                 if o.__class__ is _Step and o.span_context is not None]
        span = self._start_span(label[0], run.context, _INTERNAL, label[1], links, None,
                                False, False)
        return _Step(run, step_name, span, _attach(trace.set_span_in_context(span)), bind)

    def step_finished(self, token: object, error: BaseException | None) -> None:
        """Close the step span, restore the context and record the step's duration."""
        if token.__class__ is not _Step:
            return
        step: _Step = token
        elapsed = _clock() - step.start
        _runctx.unbind(step.bind)
        span = step.span
        if span is not None:
            _detach(step.attach)  # type: ignore[arg-type]
            if error is not None:
                record_error(span, error)
            span.end()
        histogram = self._step_duration
        if histogram is not None:
            if error is None:
                key = (step.run.workflow, step.name)
                attributes = self._metric_attributes.get(key)
                if attributes is None:
                    attributes = self._metric_attributes[key] = {
                        sc.WORKFLOW_NAME: key[0], sc.STEP_NAME: key[1]}
            else:
                attributes = {sc.WORKFLOW_NAME: step.run.workflow, sc.STEP_NAME: step.name,
                              sc.ERROR_TYPE: error_type(error)}
            histogram.record(elapsed, attributes)


def _detach(token: contextvars.Token[Any]) -> None:
    # OpenTelemetry logs "Failed to detach context" when a token is reset from another context;
    # if the engine ever finishes a step elsewhere, skip silently: the other context was never
    # changed by us.
    try:  # noqa: SIM105 - try/except is cheaper than suppress() on this per-step path
        token.var.reset(token)
    except (ValueError, RuntimeError):
        pass
