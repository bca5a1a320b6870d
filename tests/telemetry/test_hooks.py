"""OTelHooks driven through the hook sequence the engine performs (before the engine is wired).

The driver below calls the hooks exactly as the engine's contract says: in the task that runs the
step body, with the tokens of the step executions that emitted the step's input events.
"""

from __future__ import annotations

import io
import json

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode

import plait.logging
from plait.telemetry import OTelHooks, current
from plait.testing import SpanCapture


async def test_run_and_steps_with_fan_out_fan_in_links() -> None:
    cap = SpanCapture()
    hooks = OTelHooks(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    run = hooks.run_started("Pipeline", "run-1")
    tokens: dict[str, object] = {}

    async def execute(name: str, origins: list[object], attempt: int = 1) -> None:
        token = hooks.step_started(run, name, attempt, origins)
        await anyio.sleep(0)
        assert current() is hooks.telemetry  # model/tool code finds the run's telemetry
        hooks.step_finished(token, None)
        tokens[name] = token

    await execute("start", [run])
    async with anyio.create_task_group() as tg:
        for branch in ("left", "right"):
            tg.start_soon(execute, branch, [tokens["start"]])
    await execute("join", [tokens["left"], tokens["right"]])
    hooks.run_finished(run, None)

    wf = cap.span("invoke_workflow Pipeline")
    assert wf.parent is None
    assert dict(wf.attributes) == {"gen_ai.operation.name": "invoke_workflow",
                                   "gen_ai.workflow.name": "Pipeline", "plait.run.id": "run-1"}
    steps = {s.name: s for s in cap.spans() if s.name.startswith("step ")}
    assert set(steps) == {"step start", "step left", "step right", "step join"}
    for span in steps.values():
        assert span.parent.span_id == wf.context.span_id
        assert span.context.trace_id == wf.context.trace_id
        assert span.attributes["plait.step.attempt"] == 1
    assert steps["step start"].links == ()
    assert [link.context.span_id for link in steps["step left"].links] == [
        steps["step start"].context.span_id]
    assert {link.context.span_id for link in steps["step join"].links} == {
        steps["step left"].context.span_id, steps["step right"].context.span_id}
    points = cap.metric_points("plait.step.duration")
    assert sorted(p.attributes["plait.step.name"] for p in points) == [
        "join", "left", "right", "start"]
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing left attached


async def test_failure_retry_and_child_workflow_nesting() -> None:
    cap = SpanCapture()
    hooks = OTelHooks(tracer_provider=cap.tracer_provider)
    run = hooks.run_started("Outer", "run-2")
    first = hooks.step_started(run, "work", 1, [])
    hooks.step_finished(first, ValueError("transient"))
    second = hooks.step_started(run, "work", 2, [])
    child = hooks.run_started("Inner", "run-3")  # a child workflow started inside the step
    child_step = hooks.step_started(child, "only", 1, [])
    hooks.step_finished(child_step, None)
    hooks.run_finished(child, None)
    hooks.step_finished(second, None)
    failure = RuntimeError("gave up")
    hooks.run_finished(run, failure)

    attempts = sorted((s for s in cap.spans() if s.name == "step work"),
                      key=lambda s: s.attributes["plait.step.attempt"])
    assert [s.attributes["plait.step.attempt"] for s in attempts] == [1, 2]
    assert attempts[0].status.status_code is StatusCode.ERROR
    assert attempts[0].attributes["error.type"] == "ValueError"
    assert attempts[1].status.status_code is StatusCode.UNSET
    inner = cap.span("invoke_workflow Inner")
    assert inner.parent.span_id == attempts[1].context.span_id
    assert cap.span("step only").parent.span_id == inner.context.span_id
    outer = cap.span("invoke_workflow Outer")
    assert outer.status.status_code is StatusCode.ERROR
    assert outer.attributes["error.type"] == "RuntimeError"


async def test_log_lines_carry_run_step_and_trace_ids() -> None:
    cap = SpanCapture()
    hooks = OTelHooks(tracer_provider=cap.tracer_provider)
    out = io.StringIO()
    plait.logging.configure(json=True, level="DEBUG", stream=out)
    try:
        log = plait.logging.get_logger()
        run = hooks.run_started("Logged", "run-9")
        token = hooks.step_started(run, "fetch", 3, [])
        log.info("calling provider", headers={"Authorization": "Bearer abcdefghijklmnopqrst"},
                 url="https://x.example/v1?key=AIzaSyC1234567890abcdefghijklmnopqrstu")
        hooks.step_finished(token, None)
        log.info("outside")
        hooks.run_finished(run, None)
    finally:
        import structlog

        structlog.reset_defaults()
    inside, outside = (json.loads(line) for line in out.getvalue().splitlines())
    step = cap.span("step fetch")
    assert inside["run_id"] == "run-9" and inside["step"] == "fetch" and inside["attempt"] == 3
    assert inside["workflow"] == "Logged"
    assert inside["trace_id"] == format(step.context.trace_id, "032x")
    assert inside["span_id"] == format(step.context.span_id, "016x")
    assert inside["headers"] == {"Authorization": "[REDACTED]"}
    assert "AIza" not in out.getvalue() and "abcdefghijklmnopqrst" not in out.getvalue()
    assert "run_id" not in outside and "trace_id" not in outside


def test_configure_rejects_unknown_level() -> None:
    with pytest.raises(ValueError, match="unknown log level"):
        plait.logging.configure(level="LOUD")


def test_no_sdk_means_non_recording_spans_and_no_global_provider() -> None:
    before = trace.get_tracer_provider()
    hooks = OTelHooks()  # the globals: no SDK provider installed in this process
    run = hooks.run_started("Quiet", "r")
    token = hooks.step_started(run, "s", 1, [])
    assert not trace.get_current_span().is_recording()
    hooks.step_finished(token, None)
    hooks.run_finished(run, None)
    assert trace.get_tracer_provider() is before
