"""Context: typed state, send_event, wait_for answered by run.send, child workflows, hooks."""

from __future__ import annotations

import contextvars
from collections.abc import Sequence

import anyio
import anyio.lowlevel
import pydantic
import pytest

from plait import (
    Context,
    Event,
    HandleScope,
    InputRequired,
    PlaitError,
    RunHooks,
    StartEvent,
    StepFailed,
    StopEvent,
    Workflow,
    step,
)


class Go(StartEvent):
    n: int


class Mid(Event):
    v: int


class Approval(Event):
    ok: bool
    who: str = ""


class Progress(Event):
    pct: int


class Tally(pydantic.BaseModel):
    hits: int = 0
    notes: list[str] = []


class PydanticState(Workflow[Go, int]):
    state_type = Tally

    @step
    async def one(self, ev: Go, ctx: Context[Tally]) -> Mid:
        ctx.state.hits += ev.n
        return Mid(v=ev.n)

    @step
    async def two(self, ev: Mid, ctx: Context[Tally]) -> StopEvent:
        ctx.state.hits += ev.v
        return StopEvent(result=ctx.state.hits)


async def test_pydantic_state_is_per_run_and_typed() -> None:
    wf = PydanticState()
    assert await wf.run(n=2) == 4
    assert await wf.run(n=3) == 6
    assert await wf.run(n=1, state=Tally(hits=100)) == 102


class Gate(Workflow[Go, str]):
    before: list[int]

    @step
    async def ask(self, ev: Go, ctx: Context) -> StopEvent:
        self.before.append(ev.n)  # a side effect before the wait: must run once
        ctx.write_to_stream(Progress(pct=50))
        answer = await ctx.wait_for(Approval, prompt=f"approve {ev.n}?")
        return StopEvent(result=f"{answer.ok}:{answer.who}:{ctx.attempt}")


async def test_wait_for_resumes_in_place_when_the_caller_answers() -> None:
    wf = Gate()
    wf.before = []
    with anyio.fail_after(5):
        async with wf.start(n=7) as run:
            async for ev in run.events():
                if isinstance(ev, InputRequired):
                    assert ev.step == "ask" and ev.event_type == "Approval"
                    assert ev.prompt == "approve 7?"
                    await run.send(Approval(ok=True, who="ann"))
            assert await run.result() == "True:ann:1"
    assert wf.before == [7]


async def test_an_answer_sent_before_the_wait_is_kept() -> None:
    class Later(Workflow):
        @step
        async def ask(self, ev: Go, ctx: Context) -> StopEvent:
            await anyio.sleep(0.02)
            a = await ctx.wait_for(Approval, where=lambda e: e.who == "bob")
            return StopEvent(result=a.who)

    with anyio.fail_after(5):
        async with Later().start(n=0) as run:
            await run.send(Approval(ok=False, who="eve"))
            await run.send(Approval(ok=True, who="bob"))
            assert await run.result() == "bob"


async def test_wait_for_timeout_raises_in_the_step() -> None:
    class Impatient(Workflow):
        @step
        async def ask(self, ev: Go, ctx: Context) -> StopEvent:
            await ctx.wait_for(Approval, timeout=0.02)
            return StopEvent()

    with anyio.fail_after(5):
        async with Impatient().start(n=0) as run:
            with pytest.raises(StepFailed) as info:
                await run.result()
    assert isinstance(info.value.__cause__, TimeoutError)


async def test_send_to_a_finished_run_is_an_error() -> None:
    async with PydanticState().start(n=1) as run:
        await run.result()
        with pytest.raises(PlaitError, match="already finished"):
            await run.send(Approval(ok=True))


class Kick(Event):
    v: int


class Externally(Workflow):
    """A step can take events the caller sends in (here: more Kick events).

    A run with nothing running or pending and no stop fails with WorkflowStalled rather than
    idling, so the caller sends while the run is still busy.
    """

    @step
    async def begin(self, ev: Go, ctx: Context) -> Kick:
        return Kick(v=ev.n)

    @step
    async def kicked(self, ev: Kick, ctx: Context) -> StopEvent | None:
        ctx.write_to_stream(Progress(pct=ev.v))
        if ev.v < 3:
            await anyio.sleep(0.05)  # the caller sends the next Kick meanwhile
            return None
        return StopEvent(result=ev.v)


async def test_run_send_delivers_to_a_consuming_step() -> None:
    with anyio.fail_after(5):
        async with Externally().start(n=1) as run:
            async for ev in run.events():
                if isinstance(ev, Progress) and ev.pct == 1:
                    await run.send(Kick(v=3))
            assert await run.result() == 3


class ChildGo(StartEvent):
    text: str


class Child(Workflow[ChildGo, int]):
    @step
    async def count(self, ev: ChildGo, ctx: Context) -> StopEvent:
        ctx.write_to_stream(Progress(pct=len(ev.text)))
        return StopEvent(result=len(ev.text))


class Parent(Workflow[Go, int]):
    @step
    async def call(self, ev: Go, ctx: Context) -> StopEvent:
        a = await ctx.run_workflow(Child(), text="x" * ev.n)
        b = await ctx.run_workflow(Child(), ChildGo(text="yy"), forward=False)
        return StopEvent(result=a + b)


async def test_child_workflow_result_and_forwarded_stream() -> None:
    async with Parent().start(n=3) as run:
        progress = [ev.pct async for ev in run.events() if isinstance(ev, Progress)]
        assert await run.result() == 5
    assert progress == [3]


async def test_child_shares_the_parents_handles_and_store() -> None:
    scope = HandleScope()
    seen: list[object] = []

    class Peek(Workflow):
        @step
        async def s(self, ev: ChildGo, ctx: Context) -> StopEvent:
            seen.append(ctx.handles)
            return StopEvent()

    class Outer(Workflow):
        @step
        async def s(self, ev: Go, ctx: Context) -> StopEvent:
            seen.append(ctx.handles)
            await ctx.run_workflow(Peek(), text="")
            return StopEvent()

    await Outer().run(n=0, handles=scope)
    assert seen == [scope, scope]


def test_context_outside_a_run() -> None:
    ctx: Context[object] = Context(run_id="r1")
    assert ctx.run_id == "r1" and ctx.store is None and len(ctx.handles) == 0
    assert ctx.attempt == 1 and ctx.idempotency_key.startswith("r1/")
    with pytest.raises(PlaitError, match="not attached"):
        ctx.send_event(Mid(v=1))


# --- hooks ---------------------------------------------------------------------------------------

current_span: contextvars.ContextVar[str | None] = contextvars.ContextVar("span", default=None)


class Recorder(RunHooks):
    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []
        self.n = 0
        self.resets: dict[str, contextvars.Token[str | None]] = {}

    def run_started(self, workflow_name: str, run_id: str) -> object:
        self.calls.append(("run_started", workflow_name))
        return "run"

    def run_finished(self, run_token: object, error: BaseException | None) -> None:
        self.calls.append(("run_finished", run_token, type(error).__name__ if error else None))

    def step_started(self, run_token: object, step_name: str, attempt: int,
                     origins: Sequence[object]) -> object:
        self.n += 1
        token = f"{step_name}#{self.n}"
        self.calls.append(("step_started", step_name, attempt, sorted(map(str, origins))))
        self.resets[token] = current_span.set(token)
        return token

    def step_finished(self, step_token: object, error: BaseException | None) -> None:
        assert isinstance(step_token, str)
        current_span.reset(self.resets.pop(step_token))
        self.calls.append(("step_finished", step_token, type(error).__name__ if error else None))


class Item(Event):
    i: int


class Out(Event):
    i: int
    span: str


class Traced(Workflow):
    @step
    async def split(self, ev: Go) -> list[Item]:
        return [Item(i=i) for i in range(ev.n)]

    @step(workers=2)
    async def work(self, ev: Item) -> Out:
        await anyio.lowlevel.checkpoint()
        span = current_span.get()
        assert span is not None
        return Out(i=ev.i, span=span)

    @step
    async def join(self, evs: list[Out]) -> StopEvent:
        return StopEvent(result=sorted(e.span for e in evs))


async def test_hooks_see_runs_steps_origins_and_own_the_body_context() -> None:
    hooks = Recorder()
    spans = await Traced().run(n=3, hooks=hooks)
    calls = hooks.calls
    assert calls[0] == ("run_started", "Traced")
    assert calls[-1] == ("run_finished", "run", None)
    starts = [c for c in calls if c[0] == "step_started"]
    assert starts[0] == ("step_started", "split", 1, [])
    work_starts = [c for c in starts if c[1] == "work"]
    assert work_starts and all(c[3] == ["split#1"] for c in work_starts)
    # The fan-in is linked to every execution that produced one of its events.
    assert starts[-1][1] == "join" and starts[-1][3] == spans
    # Each body saw its own token as the current "span".
    assert len(set(spans)) == 3 and all(s.startswith("work#") for s in spans)
    assert current_span.get() is None


async def test_hooks_see_failures_and_are_optional_per_run() -> None:
    class Fails(Workflow):
        @step
        async def s(self, ev: Go) -> StopEvent:
            raise ValueError("x")

    hooks = Recorder()
    with pytest.raises(StepFailed):
        await Fails(hooks=hooks).run(n=0)
    assert ("run_finished", "run", "StepFailed") in hooks.calls
    assert any(c[0] == "step_finished" and c[2] == "ValueError" for c in hooks.calls)


class AsksInChild(Workflow[ChildGo, str]):
    @step
    async def ask(self, ev: ChildGo, ctx: Context) -> StopEvent:
        answer = await ctx.wait_for(Approval, prompt=ev.text)
        return StopEvent(result=f"child got {answer.who}")


class HostsAsker(Workflow[Go, str]):
    @step
    async def call(self, ev: Go, ctx: Context) -> StopEvent:
        return StopEvent(result=await ctx.run_workflow(AsksInChild(), text="sign?"))


async def test_a_child_waiting_for_input_is_answered_through_the_parent() -> None:
    with anyio.fail_after(5):
        async with HostsAsker().start(n=0) as run:
            async for ev in run.events():
                if isinstance(ev, InputRequired):
                    assert ev.prompt == "sign?" and ev.step == "ask"
                    await run.send(Approval(ok=True, who="kim"))
            assert await run.result() == "child got kim"


async def test_wait_for_in_a_plain_run_fails_fast_instead_of_hanging() -> None:
    with anyio.fail_after(5), pytest.raises(StepFailed) as info:
        await Impatient2().run(n=0)
    assert "nobody can answer" in str(info.value.__cause__)


class Impatient2(Workflow):
    @step
    async def ask(self, ev: Go, ctx: Context) -> StopEvent:
        await ctx.wait_for(Approval)
        return StopEvent()


async def test_run_send_waits_while_the_consumer_is_far_behind() -> None:
    class Slow(Workflow):
        @step
        async def begin(self, ev: Go) -> Kick:
            return Kick(v=0)

        @step
        async def kicked(self, ev: Kick, ctx: Context) -> StopEvent | None:
            await anyio.sleep(0.005)
            return StopEvent(result=ev.v) if ev.v >= 20 else None

    with anyio.fail_after(5):
        async with Slow(stream_buffer=4).start(n=0) as run:
            t0 = anyio.current_time()
            for v in range(1, 21):
                await run.send(Kick(v=v))
            # 20 sends into a backlog of 4 had to wait for the step to work through most.
            assert anyio.current_time() - t0 >= 0.005 * 12
            assert await run.result() == 20


async def test_hooks_see_a_timed_out_attempt_as_step_timeout() -> None:
    from plait import Retry, StepTimeout

    class Sleepy(Workflow):
        @step(timeout=0.02, retry=Retry(attempts=2, backoff=0, jitter=0))
        async def s(self, ev: Go, ctx: Context) -> StopEvent:
            if ctx.attempt == 1:
                await anyio.sleep(5)
            return StopEvent(result=ctx.attempt)

    hooks = Recorder()
    with anyio.fail_after(5):
        assert await Sleepy().run(n=0, hooks=hooks) == 2
    finished = [c for c in hooks.calls if c[0] == "step_finished"]
    assert [c[2] for c in finished] == [StepTimeout.__name__, None]
    assert [c[2] for c in hooks.calls if c[0] == "step_started"] == [1, 2]


run_span: contextvars.ContextVar[str | None] = contextvars.ContextVar("run_span", default=None)


class RunScoped(RunHooks):
    """Makes a 'run span' current for the whole run, like an OpenTelemetry implementation."""

    def __init__(self) -> None:
        self.token: contextvars.Token[str | None] | None = None

    def run_started(self, workflow_name: str, run_id: str) -> object:
        self.token = run_span.set(f"run:{run_id}")
        return run_id

    def run_finished(self, run_token: object, error: BaseException | None) -> None:
        assert self.token is not None
        run_span.reset(self.token)  # raises if called in another context than run_started


async def test_run_hooks_bracket_every_step_in_one_context() -> None:
    class Spans(Workflow):
        @step
        async def split(self, ev: Go) -> list[Item]:
            return [Item(i=i) for i in range(ev.n)]

        @step(workers=3)
        async def work(self, ev: Item) -> Out:
            await anyio.lowlevel.checkpoint()
            return Out(i=ev.i, span=run_span.get() or "")

        @step
        async def join(self, evs: list[Out]) -> StopEvent:
            return StopEvent(result={e.span for e in evs})

    spans = await Spans().run(n=6, run_id="r9", hooks=RunScoped())
    assert spans == {"run:r9"}  # spawned workers inherited the run's context
    assert run_span.get() is None
    async with Spans().start(n=4, run_id="r10", hooks=RunScoped()) as run:
        assert await run.result() == {"run:r10"}
