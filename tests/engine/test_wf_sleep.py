"""``ctx.sleep``: a pause that other steps run through, cancellable, durable when checkpointed."""

from __future__ import annotations

import pathlib
import time
from typing import ClassVar

import anyio
import pytest

from plait import (
    CheckpointError,
    Context,
    Event,
    InputRequired,
    StartEvent,
    StepFailed,
    StepStarted,
    StopEvent,
    Workflow,
    step,
)
from plait._checkpoint import decode_checkpoint, decode_event
from plait._inbox import SleepUntil
from plait.stores import SQLiteCheckpointStore


class Nap(StartEvent):
    seconds: float


class Item(Event):
    i: int


class Done(Event):
    i: int


class Gate(Event):
    ok: bool


class Parallel(Workflow[Nap, list[int]]):
    """Two items sleep side by side: the pauses overlap instead of adding up."""

    @step
    async def split(self, ev: Nap) -> list[Item]:
        return [Item(i=0), Item(i=1)]

    @step(workers=2)
    async def nap(self, ev: Item, ctx: Context) -> Done:
        await ctx.sleep(0.3)
        return Done(i=ev.i)

    @step
    async def join(self, evs: list[Done]) -> StopEvent:
        return StopEvent(result=sorted(e.i for e in evs))


class Sleeper(Workflow[Nap, str]):
    """One step sleeps; ``cleaned`` records that its finally block ran."""

    cleaned: ClassVar[list[str]] = []

    @step
    async def nap(self, ev: Nap, ctx: Context) -> StopEvent:
        try:
            await ctx.sleep(ev.seconds)
        finally:
            Sleeper.cleaned.append(ctx.run_id)
        return StopEvent(result=f"slept attempt={ctx.attempt}")


class AskThenSleep(Workflow[Nap, str]):
    """A wait and a sleep in one step execution: both replay after a resume."""

    @step
    async def work(self, ev: Nap, ctx: Context) -> StopEvent:
        gate = await ctx.wait_for(Gate, prompt="go?")
        await ctx.sleep(ev.seconds)
        return StopEvent(result=f"{gate.ok} attempt={ctx.attempt}")


async def _stop_after(wf: Workflow[Nap, str], run_id: str, seconds: float,
                      into_sleep: float) -> None:
    """Start a run, let its step sleep ``into_sleep`` seconds, then stop the run."""
    async with wf.start(seconds=seconds, run_id=run_id) as run:
        async for ev in run.events():
            if isinstance(ev, StepStarted):
                break
        await anyio.sleep(into_sleep)


async def _answer_then_stop(wf: Workflow[Nap, str], run_id: str, seconds: float,
                            into_sleep: float) -> None:
    """Start a run, answer its step's wait, let it sleep ``into_sleep`` seconds, then stop it."""
    async with wf.start(seconds=seconds, run_id=run_id) as run:
        async for ev in run.events():
            if isinstance(ev, InputRequired):
                await run.send(Gate(ok=True))
                break
        await anyio.sleep(into_sleep)


async def test_sleep_lasts_its_duration_without_blocking_other_steps() -> None:
    began = time.monotonic()
    with anyio.fail_after(5):
        assert await Parallel().run(seconds=0) == [0, 1]
    took = time.monotonic() - began
    assert 0.29 <= took < 0.55, took  # two 0.3 s sleeps, side by side


async def test_cancelling_a_sleeping_step_runs_its_finally_blocks() -> None:
    Sleeper.cleaned = []
    began = time.monotonic()
    with anyio.fail_after(5):
        await _stop_after(Sleeper(), "c1", 30, 0.05)
    assert Sleeper.cleaned == ["c1"]
    assert time.monotonic() - began < 2


async def test_sleep_rejects_bad_durations_and_works_outside_a_run() -> None:
    ctx: Context = Context(run_id="loose")
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite number of seconds"):
            await ctx.sleep(bad)
    began = time.monotonic()
    await ctx.sleep(0.05)
    assert time.monotonic() - began >= 0.045


async def test_resumed_sleep_waits_only_for_what_is_left(tmp_path: pathlib.Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "c.db")
    began = time.monotonic()
    with anyio.fail_after(10):
        await _stop_after(Sleeper(checkpoints=store), "s1", 2.0, 1.0)
        # The wake-up time was saved when the sleep began, as the step's first recorded pause.
        cp = decode_checkpoint(await store.load("s1"))
        assert cp.status == "running" and [j.step for j in cp.jobs] == ["nap"]
        saved = decode_event(cp.jobs[0].answers[0], {})
        assert isinstance(saved, SleepUntil)
        assert 0.9 < saved.deadline - time.time() < 1.1
        assert await Sleeper.resume("s1", store=store) == "slept attempt=2"
    took = time.monotonic() - began
    # 2 s in all, from the original start: not 1 s slept + 2 s again.
    assert 1.95 <= took < 2.6, took


async def test_a_sleep_past_its_deadline_ends_at_once_on_resume(tmp_path: pathlib.Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "c.db")
    with anyio.fail_after(5):
        await _stop_after(Sleeper(checkpoints=store), "s2", 0.3, 0.1)
        await anyio.sleep(0.3)  # the run is down while its deadline passes
        began = time.monotonic()
        assert await Sleeper.resume("s2", store=store) == "slept attempt=2"
    assert time.monotonic() - began < 0.2


async def test_waits_and_sleeps_replay_in_order_after_resume(tmp_path: pathlib.Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "c.db")
    with anyio.fail_after(5):
        await _answer_then_stop(AskThenSleep(checkpoints=store), "w1", 0.6, 0.2)
        cp = decode_checkpoint(await store.load("w1"))
        assert [a.type.rsplit(":", 1)[1] for a in cp.jobs[0].answers] == ["Gate", "SleepUntil"]
        began = time.monotonic()
        async with AskThenSleep.resume("w1", store=store) as run:
            asked = [ev async for ev in run.events() if isinstance(ev, InputRequired)]
            assert await run.result() == "True attempt=2"
    assert asked == []  # the answer was replayed, not asked for again
    assert time.monotonic() - began < 0.55  # and only the rest of the sleep was slept


class Reordered(Workflow[Nap, str]):
    """Its step waits then sleeps, or (``flipped``, a changed deployment) sleeps then waits."""

    flipped = False

    @step
    async def work(self, ev: Nap, ctx: Context) -> StopEvent:
        if Reordered.flipped:
            await ctx.sleep(ev.seconds)
        gate = await ctx.wait_for(Gate)
        if not Reordered.flipped:
            await ctx.sleep(ev.seconds)
        return StopEvent(result=str(gate.ok))


async def test_a_step_whose_pauses_changed_fails_clearly_on_resume(
        tmp_path: pathlib.Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "c.db")
    Reordered.flipped = False
    with anyio.fail_after(5):
        await _answer_then_stop(Reordered(checkpoints=store), "x1", 30, 0.05)
        Reordered.flipped = True
        try:
            with pytest.raises(StepFailed) as caught:
                await Reordered.resume("x1", store=store)
        finally:
            Reordered.flipped = False
    assert isinstance(caught.value.__cause__, CheckpointError)
    assert "pauses for SleepUntil where its checkpoint recorded Gate" in str(caught.value.__cause__)
