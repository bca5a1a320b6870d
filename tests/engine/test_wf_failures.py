"""Timeouts, retries, failures and cancellation: typed errors, and nothing ever hangs."""

from __future__ import annotations

import time

import anyio
import pytest

from plait import (
    Context,
    Event,
    Retry,
    StartEvent,
    StepFailed,
    StepFinished,
    StepTimeout,
    StopEvent,
    Workflow,
    WorkflowCancelled,
    WorkflowTimeout,
    step,
)


class Go(StartEvent):
    n: int


class Mid(Event):
    v: int


class Flaky(Workflow):
    """Times out on the first ``n`` attempts, then answers quickly."""

    @step(timeout=0.05, retry=Retry(attempts=3, backoff=0.01, jitter=0))
    async def slow(self, ev: Go, ctx: Context) -> StopEvent:
        if ctx.attempt <= ev.n:
            await anyio.sleep(5)
        return StopEvent(result=ctx.attempt)


async def test_step_timeout_is_retried() -> None:
    with anyio.fail_after(5):
        assert await Flaky().run(n=2) == 3


async def test_step_timeout_after_all_attempts() -> None:
    with anyio.fail_after(5), pytest.raises(StepTimeout) as info:
        await Flaky().run(n=5)
    assert info.value.step == "slow" and info.value.attempts == 3
    assert isinstance(info.value, TimeoutError)


async def test_a_steps_own_timeout_error_is_not_a_step_timeout() -> None:
    class OwnTimeout(Workflow):
        @step(timeout=5)
        async def s(self, ev: Go) -> StopEvent:
            raise TimeoutError("the step's own")

    with pytest.raises(StepFailed) as info:
        await OwnTimeout().run(n=0)
    assert isinstance(info.value.__cause__, TimeoutError)


class Boom(Exception):
    pass


class Other(Exception):
    pass


class Failing(Workflow):
    calls: list[int]

    @step(retry=Retry(attempts=4, backoff=0.001, jitter=0, on=(Boom,)))
    async def s(self, ev: Go, ctx: Context) -> StopEvent:
        self.calls.append(ctx.attempt)
        if ev.n == 0:
            raise Boom("secret-free message")
        if ev.n == 1:
            raise Other("not retried")
        if ctx.attempt < 3:
            raise Boom("transient")
        return StopEvent(result="ok")


async def test_step_failed_keeps_the_cause_after_retries() -> None:
    wf = Failing()
    wf.calls = []
    with pytest.raises(StepFailed) as info:
        await wf.run(n=0)
    assert isinstance(info.value.__cause__, Boom)
    assert info.value.step == "s" and info.value.attempt == 4
    assert wf.calls == [1, 2, 3, 4]


async def test_retry_filters_by_exception_type() -> None:
    wf = Failing()
    wf.calls = []
    with pytest.raises(StepFailed) as info:
        await wf.run(n=1)
    assert isinstance(info.value.__cause__, Other) and wf.calls == [1]
    wf.calls = []
    assert await wf.run(n=2) == "ok" and wf.calls == [1, 2, 3]


def test_retry_delays_back_off_with_bounded_jitter() -> None:
    r = Retry(attempts=5, backoff=0.1, jitter=0.0, multiplier=2.0, max_backoff=0.3)
    assert [r.delay(k) for k in (1, 2, 3, 4)] == [0.1, 0.2, 0.3, 0.3]
    j = Retry(backoff=1.0, jitter=0.5)
    delays = {j.delay(1) for _ in range(50)}
    assert all(0.5 <= d <= 1.5 for d in delays) and len(delays) > 1
    with pytest.raises(ValueError):
        Retry(attempts=0)


async def test_backoff_is_waited_between_attempts() -> None:
    class Slowly(Workflow):
        @step(retry=Retry(attempts=3, backoff=0.05, jitter=0))
        async def s(self, ev: Go, ctx: Context) -> StopEvent:
            if ctx.attempt < 3:
                raise Boom()
            return StopEvent(result=ctx.attempt)

    t0 = time.perf_counter()
    assert await Slowly().run(n=0) == 3
    assert time.perf_counter() - t0 >= 0.05 + 0.1 - 0.01


class Hang(Workflow):
    cleaned: list[str]

    @step
    async def begin(self, ev: Go, ctx: Context) -> Mid:
        ctx.send_event(Mid(v=1))
        try:
            await anyio.sleep(30)
        finally:
            self.cleaned.append("begin")
        return Mid(v=0)

    @step(workers=2)
    async def middle(self, ev: Mid) -> StopEvent:
        if ev.v == 1:
            try:
                await anyio.sleep(30)
            finally:
                self.cleaned.append("middle")
        return StopEvent()


async def test_workflow_timeout_cancels_running_steps() -> None:
    wf = Hang(timeout=0.1)
    wf.cleaned = []
    with anyio.fail_after(5), pytest.raises(WorkflowTimeout) as info:
        await wf.run(n=0)
    assert info.value.timeout == 0.1
    assert sorted(wf.cleaned) == ["begin", "middle"]


async def test_cancel_reaches_running_steps_and_ends_the_stream() -> None:
    wf = Hang()
    wf.cleaned = []
    with anyio.fail_after(5):
        async with wf.start(n=0) as run:
            seen = []
            async for ev in run.events():
                seen.append(ev)
                if len(seen) == 2:  # begin started, middle started
                    await run.cancel()
                    assert sorted(wf.cleaned) == ["begin", "middle"]  # finally blocks ran
            with pytest.raises(WorkflowCancelled):
                await run.result()
    assert sorted(wf.cleaned) == ["begin", "middle"]


async def test_leaving_the_block_cancels_the_run() -> None:
    wf = Hang()
    wf.cleaned = []
    with anyio.fail_after(5):
        async with wf.start(n=0) as run:
            await anyio.sleep(0.02)
        assert run.done
    assert sorted(wf.cleaned) == ["begin", "middle"]


async def test_outer_cancellation_cancels_the_run() -> None:
    wf = Hang()
    wf.cleaned = []
    with anyio.move_on_after(0.05) as scope:
        await wf.run(n=0)
    assert scope.cancelled_caught
    assert sorted(wf.cleaned) == ["begin", "middle"]


async def test_stream_ends_with_the_failure_and_result_raises() -> None:
    class Crash(Workflow):
        @step
        async def begin(self, ev: Go) -> Mid:
            return Mid(v=1)

        @step
        async def crash(self, ev: Mid) -> StopEvent:
            raise Boom()

    with anyio.fail_after(5):
        async with Crash().start(n=0) as run:
            events = [ev async for ev in run.events()]
            with pytest.raises(StepFailed):
                await run.result()
    assert events[-1] == StepFinished(step="crash", attempt=1, error="Boom")


async def test_one_failing_branch_cancels_the_others() -> None:
    wf = Hang()
    wf.cleaned = []

    class HangThenFail(Hang):
        @step(workers=2)
        async def middle(self, ev: Mid) -> StopEvent:
            if ev.v == 1:
                await anyio.sleep(0.01)
                raise Boom()
            return StopEvent()

    wf2 = HangThenFail()
    wf2.cleaned = []
    with anyio.fail_after(5), pytest.raises(StepFailed):
        await wf2.run(n=0)
    assert wf2.cleaned == ["begin"]


async def test_non_event_return_fails_the_step() -> None:
    class Wrong(Workflow):
        @step
        async def s(self, ev: Go) -> StopEvent:
            return 42  # type: ignore[return-value]

    with pytest.raises(StepFailed, match="returned int"):
        await Wrong().run(n=0)
