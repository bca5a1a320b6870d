"""Tracing real workflow runs: run and step spans, links for fan-out and fan-in, retries,
failures, child workflows, log correlation, and partial consumption of ``run.events()``."""

from __future__ import annotations

import io
import json
import logging

import anyio
import pytest
import structlog
from opentelemetry import trace
from opentelemetry.trace import StatusCode

import plait.logging
from plait import Context, Event, StartEvent, StepFailed, StopEvent, Workflow, step
from plait._retry import Retry
from plait.telemetry import OTelHooks
from plait.testing import SpanCapture


class Go(StartEvent):
    n: int = 3


class Item(Event):
    i: int


class Done(Event):
    i: int


class Fan(Workflow):
    @step
    async def split(self, ev: Go) -> list[Item]:
        return [Item(i=i) for i in range(ev.n)]

    @step(workers=2)
    async def work(self, ev: Item) -> Done:
        await anyio.sleep(0)
        return Done(i=ev.i)

    @step
    async def join(self, evs: list[Done]) -> StopEvent:
        return StopEvent(result=sum(e.i for e in evs))


def _steps(cap: SpanCapture, name: str) -> list[object]:
    return [s for s in cap.spans() if s.name == f"step {name}"]


async def test_fan_out_fan_in_spans_are_parented_and_linked() -> None:
    cap = SpanCapture()
    hooks = OTelHooks(tracer_provider=cap.tracer_provider, meter_provider=cap.meter_provider)
    assert await Fan(hooks=hooks).run(Go(n=3)) == 3
    run = cap.span("invoke_workflow Fan")
    assert run.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert run.attributes["gen_ai.workflow.name"] == "Fan"
    split, = _steps(cap, "split")
    works = _steps(cap, "work")
    join, = _steps(cap, "join")
    assert len(works) == 3
    for span in [split, *works, join]:
        assert span.parent.span_id == run.context.span_id
    assert split.links == ()  # its event came from outside the run
    for span in works:
        assert [link.context.span_id for link in span.links] == [split.context.span_id]
    assert {link.context.span_id for link in join.links} == {w.context.span_id for w in works}
    assert len(cap.metric_points("plait.step.duration")) == 3  # one series per step name


class Flaky(Workflow):
    calls = 0

    @step(retry=Retry(attempts=2, backoff=0, jitter=0))
    async def shaky(self, ev: Go) -> StopEvent:
        Flaky.calls += 1
        if Flaky.calls == 1:
            raise ConnectionError("first attempt fails")
        return StopEvent(result="ok")


class Broken(Workflow):
    @step
    async def boom(self, ev: Go) -> StopEvent:
        raise KeyError("missing")


async def test_retries_and_failures() -> None:
    cap = SpanCapture()
    hooks = OTelHooks(tracer_provider=cap.tracer_provider)
    Flaky.calls = 0
    assert await Flaky(hooks=hooks).run(Go()) == "ok"
    first, second = sorted(_steps(cap, "shaky"), key=lambda s: s.attributes["plait.step.attempt"])
    assert first.attributes["plait.step.attempt"] == 1
    assert first.status.status_code is StatusCode.ERROR
    assert first.attributes["error.type"] == "ConnectionError"
    assert second.attributes["plait.step.attempt"] == 2
    assert second.status.status_code is StatusCode.UNSET
    with pytest.raises(StepFailed):
        await Broken(hooks=hooks).run(Go())
    run = cap.span("invoke_workflow Broken")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes["error.type"] == "plait.StepFailed"
    assert cap.span("step boom").attributes["error.type"] == "KeyError"


class Child(Workflow):
    @step
    async def inner(self, ev: Go) -> StopEvent:
        return StopEvent(result=ev.n * 2)


class Parent(Workflow):
    @step
    async def outer(self, ev: Go) -> StopEvent:
        return StopEvent(result=await Child(hooks=self.hooks).run(Go(n=ev.n)))


async def test_child_workflow_nests_under_the_step_that_ran_it() -> None:
    cap = SpanCapture()
    hooks = OTelHooks(tracer_provider=cap.tracer_provider)
    assert await Parent(hooks=hooks).run(Go(n=4)) == 8
    outer = cap.span("step outer")
    child = cap.span("invoke_workflow Child")
    assert child.parent.span_id == outer.context.span_id
    assert child.context.trace_id == cap.span("invoke_workflow Parent").context.trace_id
    assert cap.span("step inner").parent.span_id == child.context.span_id


class Chatty(Workflow):
    @step
    async def speak(self, ev: Go, ctx: Context) -> StopEvent:
        plait.logging.get_logger().info("inside", api_key="sk-" + "x" * 30)
        for i in range(5):
            ctx.write_to_stream(Item(i=i))
        return StopEvent(result="spoke")


async def test_logs_carry_the_run_and_partial_event_consumption_is_clean(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    cap = SpanCapture()
    hooks = OTelHooks(tracer_provider=cap.tracer_provider)
    out = io.StringIO()
    plait.logging.configure(json=True, stream=out)
    try:
        async with Chatty(hooks=hooks).start(Go()) as run:
            async for ev in run.events():
                if isinstance(ev, Item):
                    break  # stop reading early
            assert await run.result() == "spoke"
    finally:
        structlog.reset_defaults()
    (line,) = [json.loads(x) for x in out.getvalue().splitlines()]
    span = cap.span("step speak")
    assert line["run_id"] == cap.span("invoke_workflow Chatty").attributes["plait.run.id"]
    assert line["step"] == "speak" and line["attempt"] == 1
    assert line["span_id"] == format(span.context.span_id, "016x")
    assert line["api_key"] == "[REDACTED]"
    assert "Failed to detach context" not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert trace.get_current_span() is trace.INVALID_SPAN


class Slow(Workflow):
    @step
    async def wait(self, ev: Go) -> StopEvent:
        await anyio.sleep(30)
        return StopEvent(result="never")


async def test_a_cancelled_run_still_ends_its_step_span() -> None:
    cap = SpanCapture()
    hooks = OTelHooks(tracer_provider=cap.tracer_provider)
    async with Slow(hooks=hooks).start(Go()) as run:
        async for ev in run.events():
            if getattr(ev, "step", None) == "wait":
                break
        await run.cancel()
    step_span = cap.span("step wait")
    assert step_span.status.status_code is StatusCode.ERROR
    assert "ancel" in step_span.attributes["error.type"]
    run_span = cap.span("invoke_workflow Slow")
    assert run_span.attributes["error.type"] == "plait.WorkflowCancelled"
    assert trace.get_current_span() is trace.INVALID_SPAN
