"""Fan-out (a step returns a list) and fan-in (``list[E]`` collects, ``tuple[A, B]`` joins)."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from plait import (
    Context,
    Event,
    StartEvent,
    StepFailed,
    StopEvent,
    Workflow,
    WorkflowStalled,
    step,
)


class Go(StartEvent):
    n: int


class Item(Event):
    i: int


class Scored(Event):
    i: int
    score: int


class Checked(Event):
    i: int
    score: int


class Pipeline(Workflow[Go, list[int]]):
    """split -> (score -> check, several hops inside the fan-out) -> gather."""

    @step
    async def split(self, ev: Go) -> list[Item]:
        return [Item(i=i) for i in range(ev.n)]

    @step(workers=8)
    async def score(self, ev: Item) -> Scored | None:
        await anyio.lowlevel.checkpoint()
        if ev.i % 5 == 4:
            return None  # dropped members simply do not arrive at the fan-in
        return Scored(i=ev.i, score=ev.i * 2)

    @step(workers=3)
    async def check(self, ev: Scored) -> Checked:
        return Checked(i=ev.i, score=ev.score + 1)

    @step
    async def gather(self, evs: list[Checked]) -> StopEvent:
        return StopEvent(result=sorted(e.score for e in evs))


async def test_fan_out_and_fan_in_through_several_hops() -> None:
    got = await Pipeline().run(n=1000)
    assert got == sorted(i * 2 + 1 for i in range(1000) if i % 5 != 4)


async def test_empty_fan_out_reaches_the_fan_in_with_an_empty_list() -> None:
    assert await Pipeline().run(n=0) == []
    assert await Pipeline().run(n=4) == [1, 3, 5, 7]
    assert await Pipeline().run(n=5) == [1, 3, 5, 7]


async def test_workers_bound_concurrency() -> None:
    running = 0
    peak = 0

    class Bounded(Workflow):
        @step
        async def split(self, ev: Go) -> list[Item]:
            return [Item(i=i) for i in range(ev.n)]

        @step(workers=4)
        async def work(self, ev: Item) -> Scored:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await anyio.sleep(0.01)
            running -= 1
            return Scored(i=ev.i, score=0)

        @step
        async def done(self, evs: list[Scored]) -> StopEvent:
            return StopEvent(result=len(evs))

    with anyio.fail_after(5):
        assert await Bounded().run(n=20) == 20
    assert peak == 4


class Text(Event):
    body: str


class Image(Event):
    url: str


class TextDone(Event):
    words: int


class ImageDone(Event):
    pixels: int


class Join(Workflow):
    """A heterogeneous fan-out joined as one of each type."""

    @step
    async def split(self, ev: Go) -> list[Text | Image]:
        return [Image(url="u" * ev.n), Text(body="a b c")]

    @step
    async def text(self, ev: Text) -> TextDone:
        await anyio.sleep(0.01)
        return TextDone(words=len(ev.body.split()))

    @step
    async def image(self, ev: Image) -> ImageDone:
        return ImageDone(pixels=len(ev.url))

    @step
    async def join(self, evs: tuple[TextDone, ImageDone]) -> StopEvent:
        text, image = evs
        return StopEvent(result=(text.words, image.pixels))


async def test_join_one_of_each_type_in_declared_order() -> None:
    assert await Join().run(n=7) == (3, 7)


class Outer(Event):
    k: int


class Inner(Event):
    k: int
    j: int


class InnerDone(Event):
    k: int
    j: int


class Partial(Event):
    k: int
    total: int


class Nested(Workflow):
    @step
    async def outer(self, ev: Go) -> list[Outer]:
        return [Outer(k=k) for k in range(ev.n)]

    @step(workers=2)
    async def inner(self, ev: Outer) -> list[Inner]:
        return [Inner(k=ev.k, j=j) for j in range(ev.k)]

    @step(workers=4)
    async def leaf(self, ev: Inner) -> InnerDone:
        await anyio.lowlevel.checkpoint()
        return InnerDone(k=ev.k, j=ev.j)

    @step
    async def sum_inner(self, evs: list[InnerDone]) -> Partial:
        ks = {e.k for e in evs}
        assert len(ks) <= 1, "an inner fan-in must only see its own fan-out"
        return Partial(k=ks.pop() if ks else -1, total=sum(e.j for e in evs))

    @step
    async def sum_outer(self, evs: list[Partial]) -> StopEvent:
        return StopEvent(result=sorted(e.total for e in evs))


async def test_nested_fan_outs_collect_per_level() -> None:
    # outer k has inner j in range(k): total = k*(k-1)/2; k=0 gives an empty inner fan-in.
    assert await Nested().run(n=6) == sorted(k * (k - 1) // 2 for k in range(6))


class Ping(Event):
    v: int


class Pong(Event):
    v: int


class LooseJoin(Workflow):
    """Outside a fan-out a join waits for one of each type, sent separately."""

    @step
    async def begin(self, ev: Go, ctx: Context) -> Ping | Pong:
        ctx.send_event(Pong(v=ev.n * 10))
        await anyio.sleep(0.01)
        return Ping(v=ev.n)

    @step
    async def both(self, evs: tuple[Ping, Pong]) -> StopEvent:
        return StopEvent(result=evs[0].v + evs[1].v)


async def test_join_outside_a_fan_out() -> None:
    assert await LooseJoin().run(n=2) == 22


async def test_list_fan_in_outside_a_fan_out_is_a_batch_of_one() -> None:
    class Single(Workflow):
        @step
        async def begin(self, ev: Go) -> Item:
            return Item(i=ev.n)

        @step
        async def collect(self, evs: list[Item]) -> StopEvent:
            return StopEvent(result=[e.i for e in evs])

    assert await Single().run(n=3) == [3]


async def test_a_join_missing_a_type_fails_clearly() -> None:
    class Uneven(Workflow):
        @step
        async def split(self, ev: Go) -> list[Text | Image]:
            return [Text(body="x"), Text(body="y")]

        @step
        async def text(self, ev: Text) -> TextDone:
            return TextDone(words=1)

        @step
        async def image(self, ev: Image) -> ImageDone:
            return ImageDone(pixels=1)

        @step
        async def join(self, evs: tuple[TextDone, ImageDone]) -> StopEvent:
            return StopEvent(result=evs)

    with pytest.raises(StepFailed, match=r"join step 'join' needs exactly one of each"):
        await Uneven().run(n=1)


async def test_a_run_with_nothing_left_and_no_stop_fails_instead_of_hanging() -> None:
    class Dead(Workflow):
        @step
        async def begin(self, ev: Go) -> Item | StopEvent:
            return Item(i=1) if ev.n else StopEvent()

        @step
        async def swallow(self, ev: Item) -> StopEvent | None:
            return None

    with anyio.fail_after(5), pytest.raises(WorkflowStalled):
        await Dead().run(n=1)


async def test_fan_out_of_non_events_fails() -> None:
    class Bad(Workflow):
        @step
        async def split(self, ev: Go) -> list[Item]:
            return [1, 2]  # type: ignore[list-item]

        @step
        async def take(self, evs: list[Item]) -> StopEvent:
            return StopEvent()

    with pytest.raises(StepFailed, match="not events"):
        await Bad().run(n=1)


class Wide(Workflow):
    @step
    async def split(self, ev: Go) -> list[Item]:
        return [Item(i=i) for i in range(ev.n)]

    @step(workers=8)
    async def work(self, ev: Item) -> Scored:
        return Scored(i=ev.i, score=1)

    @step
    async def gather(self, evs: list[Scored]) -> StopEvent:
        return StopEvent(result=len(evs))


async def test_fan_out_cost_grows_linearly() -> None:
    import time

    async def best_of_two(n: int) -> float:
        times = []
        for _ in range(2):
            t0 = time.process_time()
            assert await Wide().run(n=n) == n
            times.append(time.process_time() - t0)
        return min(times)

    small, large = await best_of_two(2_000), await best_of_two(20_000)
    # 10x the events: linear costs ~10x; a quadratic scheduler would cost ~100x.
    assert large < small * 30, (small, large)
