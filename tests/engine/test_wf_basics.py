"""Running workflows: the public forms from the issue, streaming, lifecycle events, isolation."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import msgspec
import pytest

from plait import (
    Context,
    Event,
    Retry,
    StartEvent,
    StepFinished,
    StepStarted,
    StopEvent,
    Workflow,
    WorkflowDefinitionError,
    step,
)


class Go(StartEvent):
    n: int


class Mid(Event):
    v: int


class Note(Event):
    text: str


class Linear(Workflow[Go, int]):
    @step
    async def a(self, ev: Go, ctx: Context) -> Mid:
        ctx.write_to_stream(Note(text=f"a saw {ev.n}"))
        return Mid(v=ev.n + 1)

    @step(workers=4, timeout=2.0, retry=Retry(attempts=3, backoff=0.1))
    async def b(self, ev: Mid, ctx: Context) -> StopEvent:
        return StopEvent(result=ev.v * 10)


class Answer(StopEvent):
    text: str


class CustomStop(Workflow[Go, Answer]):
    @step
    async def only(self, ev: Go) -> Answer:
        return Answer(text="x" * ev.n)


def test_events_are_keyword_only_msgspec_structs() -> None:
    assert issubclass(Go, msgspec.Struct)
    with pytest.raises(TypeError):
        Mid(1)  # type: ignore[misc]
    done = Answer(text="t")
    assert done.result is None and done.text == "t"
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(Mid(v=3)), type=Mid) == Mid(v=3)


async def test_run_with_event_and_with_keywords() -> None:
    assert await Linear().run(Go(n=1)) == 20
    assert await Linear().run(n=4) == 50


async def test_custom_stop_event_is_returned_itself() -> None:
    result = await CustomStop().run(n=3)
    assert isinstance(result, Answer) and result.text == "xxx"


async def test_bad_start_arguments_raise_definition_error() -> None:
    with pytest.raises(WorkflowDefinitionError, match="Go"):
        await Linear().run(m=1)
    with pytest.raises(WorkflowDefinitionError, match="Mid"):
        await Linear().run(Mid(v=1))  # type: ignore[arg-type]
    with pytest.raises(WorkflowDefinitionError, match=r"unexpected field\(s\) 'm'"):
        await Linear().run(n=1, m=2)
    with pytest.raises(WorkflowDefinitionError, match=r"Expected `int`, got `str`"):
        await Linear().run(n="one")


async def test_stream_has_written_and_lifecycle_events_in_order() -> None:
    seen: list[Event] = []
    async with Linear().start(n=2) as run:
        async for ev in run.events():
            seen.append(ev)
        assert await run.result() == 30
    assert seen == [
        StepStarted(step="a", attempt=1),
        Note(text="a saw 2"),
        StepFinished(step="a", attempt=1),
        StepStarted(step="b", attempt=1),
        StepFinished(step="b", attempt=1),
    ]


async def test_result_without_reading_the_stream_does_not_block() -> None:
    class Chatty(Workflow):
        @step
        async def talk(self, ev: Go, ctx: Context) -> StopEvent:
            for i in range(ev.n):
                ctx.write_to_stream(Note(text=str(i)))
            await anyio.lowlevel.checkpoint()
            return StopEvent(result="ok")

    async with Chatty(stream_buffer=4).start(n=100) as run:
        with anyio.fail_after(5):
            assert await run.result() == "ok"


async def test_stream_backpressure_waits_for_the_reader() -> None:
    class Producer(Workflow):
        @step
        async def loop(self, ev: Mid, ctx: Context) -> Mid | StopEvent:
            await anyio.lowlevel.checkpoint()
            ctx.write_to_stream(Note(text=str(ev.v)))
            return Mid(v=ev.v + 1) if ev.v < 50 else StopEvent(result=ev.v)

        @step
        async def begin(self, ev: Go) -> Mid:
            return Mid(v=0)

    async with Producer(stream_buffer=8).start(n=0) as run:
        events = run.events()
        first = await events.__anext__()  # reading has begun: the bound applies from now on
        await anyio.sleep(0.05)
        assert not run.done  # blocked on the bounded stream the caller is not draining
        rest = [ev async for ev in events]
        notes = [ev.text for ev in [first, *rest] if isinstance(ev, Note)]
        assert notes == [str(i) for i in range(51)]
        assert await run.result() == 50


async def test_an_unread_stream_does_not_block_the_run() -> None:
    async with Chatty2(stream_buffer=2).start(n=50) as run:
        with anyio.fail_after(5):
            while not run.done:
                await anyio.sleep(0.01)
        notes = [ev async for ev in run.events() if isinstance(ev, Note)]
        assert len(notes) == 50  # nothing was dropped while nobody read


class Chatty2(Workflow):
    @step
    async def talk(self, ev: Go, ctx: Context) -> Mid:
        return Mid(v=ev.n)

    @step
    async def more(self, ev: Mid, ctx: Context) -> StopEvent:
        for i in range(ev.v):
            ctx.write_to_stream(Note(text=str(i)))
        return StopEvent(result="ok")


class Counter(msgspec.Struct):
    seen: list[int] = []


class Stateful(Workflow[Go, list[int]]):
    state_type = Counter

    @step
    async def first(self, ev: Go, ctx: Context[Counter]) -> Mid:
        ctx.state.seen.append(ev.n)
        await anyio.sleep(0.01 * (ev.n % 3))
        return Mid(v=ev.n)

    @step(workers=8)
    async def second(self, ev: Mid, ctx: Context[Counter]) -> StopEvent:
        await anyio.sleep(0.001)
        ctx.state.seen.append(ev.v * 100)
        return StopEvent(result=list(ctx.state.seen))


async def test_concurrent_runs_of_one_instance_share_nothing() -> None:
    wf = Stateful()
    results: dict[int, list[int]] = {}

    async def one(i: int) -> None:
        results[i] = await wf.run(n=i)

    async with anyio.create_task_group() as tg:
        for i in range(40):
            tg.start_soon(one, i)
    assert results == {i: [i, i * 100] for i in range(40)}


async def test_run_ids_are_unique_and_visible_to_steps() -> None:
    class Ids(Workflow):
        @step
        async def s(self, ev: Go, ctx: Context) -> StopEvent:
            return StopEvent(result=ctx.run_id)

    ids = {await Ids().run(n=0) for _ in range(20)}
    assert len(ids) == 20
    assert await Ids().run(n=0, run_id="mine") == "mine"


async def test_steps_without_ctx_and_union_inputs() -> None:
    class Left(Event):
        x: int

    class Right(Event):
        y: int

    class Either(Workflow):
        @step
        async def route(self, ev: Go) -> Left | Right:
            return Left(x=ev.n) if ev.n % 2 else Right(y=ev.n)

        @step
        async def handle(self, ev: Left | Right) -> StopEvent:
            return StopEvent(result=type(ev).__name__)

    assert await Either().run(n=1) == "Left"
    assert await Either().run(n=2) == "Right"


async def test_subclass_events_route_to_a_base_consumer() -> None:
    class Base(Event):
        v: int

    class Special(Base):
        pass

    class Sub(Workflow):
        @step
        async def make(self, ev: Go) -> Special:
            return Special(v=ev.n)

        @step
        async def take(self, ev: Base) -> StopEvent:
            return StopEvent(result=(type(ev).__name__, ev.v))

    assert await Sub().run(n=7) == ("Special", 7)
