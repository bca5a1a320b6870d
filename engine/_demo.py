"""``plait demo``: a small pipeline that shows the engine at work without any API key.

It streams events, fans out one draft per topic to four workers, joins the drafts, and one
draft step times out on its first attempt and succeeds on the retry.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio

from ._context import Context
from ._events import Event, StartEvent, StepFinished, StepStarted, StopEvent
from ._hooks import RunHooks
from ._retry import Retry
from ._step import step
from ._workflow import Workflow

__all__ = ["DemoPipeline", "run_demo"]


class Topics(StartEvent):
    """The run's input: what to write about."""

    topics: list[str]


class Draft(Event):
    topic: str


class Written(Event):
    topic: str
    text: str
    attempts: int


class Progress(Event):
    """Written to the stream by the steps, for the caller to show."""

    message: str


class Report(StopEvent):
    """The result: one line per topic."""

    lines: list[str]


class DemoPipeline(Workflow[Topics, Report]):
    """split -> write (4 workers, 0.2 s timeout, retried) -> combine."""

    @step
    async def split(self, ev: Topics, ctx: Context) -> list[Draft]:
        ctx.write_to_stream(Progress(message=f"fanning out {len(ev.topics)} topics"))
        return [Draft(topic=t) for t in ev.topics]

    @step(workers=4, timeout=0.2, retry=Retry(attempts=3, backoff=0.05, jitter=0.2))
    async def write(self, ev: Draft, ctx: Context) -> Written:
        if ev.topic == "timeouts" and ctx.attempt == 1:
            ctx.write_to_stream(Progress(message="'timeouts' is stuck; the step timeout will "
                                                 "cut it off and retry"))
            await anyio.sleep(10)
        await anyio.sleep(0.05)
        text = f"{ev.topic}: drafted on attempt {ctx.attempt}"
        ctx.write_to_stream(Progress(message=f"drafted {ev.topic!r}"))
        return Written(topic=ev.topic, text=text, attempts=ctx.attempt)

    @step
    async def combine(self, evs: list[Written], ctx: Context) -> Report:
        ctx.write_to_stream(Progress(message=f"fan-in collected {len(evs)} drafts"))
        return Report(lines=[e.text for e in sorted(evs, key=lambda e: e.topic)])


DEMO_TOPICS = ["events", "fan-out", "timeouts", "retries", "fan-in"]


async def run_demo(out: Callable[[str], object] = print, *,
                   hooks: RunHooks | None = None) -> Report:
    """Run the demo pipeline, printing its stream, and return the report."""
    t0 = time.perf_counter()
    async with DemoPipeline(hooks=hooks).start(topics=DEMO_TOPICS) as run:
        async for ev in run.events():
            ms = (time.perf_counter() - t0) * 1000
            if isinstance(ev, Progress):
                out(f"{ms:7.1f} ms  {ev.message}")
            elif isinstance(ev, StepStarted):
                out(f"{ms:7.1f} ms  -> {ev.step} (attempt {ev.attempt})")
            elif isinstance(ev, StepFinished) and ev.error:
                out(f"{ms:7.1f} ms  x  {ev.step} attempt {ev.attempt} failed ({ev.error}); "
                    "the retry policy tries again")
        report = await run.result()
    out("result:")
    for line in report.lines:
        out(f"  {line}")
    return report
