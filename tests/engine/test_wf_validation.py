"""A malformed workflow fails when its class statement runs, naming the step and the event."""

from __future__ import annotations

import pytest

from plait import (
    Context,
    Event,
    StartEvent,
    StepStarted,
    StopEvent,
    Workflow,
    WorkflowDefinitionError,
    step,
)


class Go(StartEvent):
    n: int


class A(Event):
    v: int


class B(Event):
    v: int


class Orphan(Event):
    v: int


def test_emitted_but_never_consumed() -> None:
    with pytest.raises(WorkflowDefinitionError, match=r"step 'first' emits Orphan, but no step"):
        class W(Workflow):
            @step
            async def first(self, ev: Go) -> Orphan | StopEvent: ...


def test_consumed_but_never_produced() -> None:
    with pytest.raises(WorkflowDefinitionError, match=r"step 'second' takes B, but no step emits"):
        class W(Workflow):
            @step
            async def first(self, ev: Go) -> StopEvent: ...

            @step
            async def second(self, ev: B) -> StopEvent: ...


def test_no_consumer_of_the_start_event() -> None:
    with pytest.raises(WorkflowDefinitionError, match=r"no step takes a StartEvent.*'only'"):
        class W(Workflow):
            @step
            async def only(self, ev: A) -> StopEvent: ...


def test_stop_event_unreachable() -> None:
    with pytest.raises(WorkflowDefinitionError, match=r"no step reachable from Go emits a StopEvent"):
        class W(Workflow):
            @step
            async def ping(self, ev: Go | B) -> A: ...

            @step
            async def pong(self, ev: A) -> B: ...


def test_unreachable_step() -> None:
    with pytest.raises(WorkflowDefinitionError, match=r"step 'island' is unreachable.*takes B"):
        class W(Workflow):
            @step
            async def first(self, ev: Go) -> StopEvent: ...

            @step
            async def island(self, ev: B) -> B | StopEvent: ...


def test_unannotated_step_parameter_and_return() -> None:
    with pytest.raises(WorkflowDefinitionError, match=r"step 'first'.*parameter 'ev'"):
        class W(Workflow):
            @step
            async def first(self, ev, ctx: Context) -> StopEvent: ...  # type: ignore[no-untyped-def]

    with pytest.raises(WorkflowDefinitionError, match=r"step 'first': no return annotation"):
        class W2(Workflow):
            @step
            async def first(self, ev: Go):  # type: ignore[no-untyped-def]
                ...


def test_non_event_annotation_and_stream_only_events() -> None:
    with pytest.raises(WorkflowDefinitionError, match=r"step 'first'.*int.*not an Event"):
        class W(Workflow):
            @step
            async def first(self, ev: int) -> StopEvent: ...

    with pytest.raises(WorkflowDefinitionError, match=r"StepStarted is a stream-only event"):
        class W2(Workflow):
            @step
            async def first(self, ev: Go) -> StepStarted | StopEvent: ...


def test_one_event_type_two_consumers() -> None:
    with pytest.raises(WorkflowDefinitionError, match=r"A is taken by both step 'x' and step 'y'"):
        class W(Workflow):
            @step
            async def start(self, ev: Go) -> A: ...

            @step
            async def x(self, ev: A) -> StopEvent: ...

            @step
            async def y(self, ev: A) -> StopEvent: ...


def test_step_options_and_sync_functions_are_checked() -> None:
    with pytest.raises(WorkflowDefinitionError, match="workers"):
        step(workers=0)
    with pytest.raises(WorkflowDefinitionError, match="timeout"):
        step(timeout=-1)
    with pytest.raises(WorkflowDefinitionError, match="async def"):
        step(lambda self, ev: None)


class Base(Workflow):
    @step
    async def prepare(self, ev: Go) -> A:
        return A(v=ev.n)

    @step
    async def finish(self, ev: A) -> StopEvent:
        return StopEvent(result=("base", ev.v))


class Replaced(Base):
    @step
    async def finish(self, ev: A) -> StopEvent:
        return StopEvent(result=("replaced", ev.v))


class Extended(Base):
    """Adds an approval step between prepare and finish by replacing finish's input."""

    @step
    async def approve(self, ev: A) -> B:
        return B(v=ev.v + 1)

    @step
    async def finish(self, ev: B) -> StopEvent:  # type: ignore[override]
        return StopEvent(result=("extended", ev.v))


async def test_subclasses_inherit_override_and_add_steps() -> None:
    assert await Base().run(n=1) == ("base", 1)
    assert await Replaced().run(n=1) == ("replaced", 1)
    assert await Extended().run(n=1) == ("extended", 2)
    assert set(Extended.graph().steps) == {"prepare", "approve", "finish"}


def test_subclass_is_validated_on_its_own() -> None:
    with pytest.raises(WorkflowDefinitionError, match=r"A is taken by both step 'finish' and step 'audit'"):
        class Broken(Base):
            @step
            async def audit(self, ev: A) -> StopEvent: ...


def test_abstract_base_skips_validation() -> None:
    class Partial(Workflow, abstract=True):
        @step
        async def half(self, ev: Go) -> A: ...

    with pytest.raises(WorkflowDefinitionError, match="no runnable step graph"):
        Partial.graph()

    class Whole(Partial):
        @step
        async def rest(self, ev: A) -> StopEvent: ...

    assert set(Whole.graph().steps) == {"half", "rest"}


def test_mermaid_names_steps_and_events() -> None:
    text = Base.mermaid()
    assert text.startswith("flowchart TD\n")
    assert "start_Go --> step_prepare" in text
    assert 'step_prepare -->|"A"| step_finish' in text
    assert 'step_finish -->|"StopEvent"| stop_StopEvent' in text
