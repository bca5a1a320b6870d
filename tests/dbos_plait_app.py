"""Plait workflows for the DBOS runtime tests, and the worker process that serves them.

Step starts are logged to ``step_starts`` (run, step, attempt, executor, database clock) so the
tests can see which worker ran what and whether anything that had completed ran again.

    python tests/dbos_plait_app.py DATABASE_URL [DEAD_AFTER]
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import anyio
import psycopg

from plait import Context, Event, StartEvent, StopEvent, Workflow, step
from plait.dbos import DBOSRuntime

URL = os.environ.get("PLAIT_TEST_DB", "")
EXECUTOR = os.environ.get("PLAIT_TEST_EXECUTOR", "caller")
_local = threading.local()


def log_start(ctx: Context, step_name: str) -> None:
    if not URL:
        return
    conn = getattr(_local, "conn", None)
    if conn is None:  # one connection per thread: connecting is the slow part
        conn = _local.conn = psycopg.connect(URL, autocommit=True)
    conn.execute(
        "insert into step_starts (run, step, attempt, executor, at_ms) values "
        "(%s, %s, %s, %s, (extract(epoch from clock_timestamp()) * 1000)::bigint)",
        (ctx.run_id, step_name, ctx.attempt, EXECUTOR),
    )


class Go(StartEvent):
    x: int


class Added(Event):
    x: int


class Doubled(Event):
    x: int


class ThreeSteps(Workflow[Go, int]):
    """add one, double, minus three: (x + 1) * 2 - 3."""

    @step
    async def add_one(self, ev: Go, ctx: Context) -> Added:
        log_start(ctx, "add_one")
        await anyio.sleep(0.005)
        return Added(x=ev.x + 1)

    @step
    async def double(self, ev: Added, ctx: Context) -> Doubled:
        log_start(ctx, "double")
        await anyio.sleep(0.005)
        return Doubled(x=ev.x * 2)

    @step
    async def minus_three(self, ev: Doubled, ctx: Context) -> StopEvent:
        log_start(ctx, "minus_three")
        await anyio.sleep(0.005)
        return StopEvent(result=ev.x - 3)


class Question(StartEvent):
    text: str


class Answer(Event):
    text: str


class Progress(Event):
    note: str


class AskHuman(Workflow[Question, str]):
    """Prepare, wait for a human's answer, finish: the wait must survive restarts."""

    @step
    async def prepare(self, ev: Question, ctx: Context) -> Added:
        log_start(ctx, "prepare")
        ctx.write_to_stream(Progress(note=f"asking {ev.text}"))
        return Added(x=len(ev.text))

    @step
    async def ask(self, ev: Added, ctx: Context) -> StopEvent:
        log_start(ctx, "ask")
        answer = await ctx.wait_for(Answer, prompt="what now?")
        return StopEvent(result=f"{answer.text} after {ev.x}")


class Nap(StartEvent):
    seconds: float


class Napper(Workflow[Nap, float]):
    """One step sleeps durably and returns when it woke (wall clock)."""

    @step
    async def nap(self, ev: Nap, ctx: Context) -> StopEvent:
        log_start(ctx, "nap")
        await ctx.sleep(ev.seconds)
        return StopEvent(result=time.time())


class Boom(Workflow[Go, int]):
    @step
    async def explode(self, ev: Go) -> StopEvent:
        raise ValueError(f"no good: {ev.x}")


def main() -> None:
    dead_after = float(sys.argv[2]) if len(sys.argv) > 2 else 1.5
    runtime = DBOSRuntime(sys.argv[1], queue="plait-tests", worker_concurrency=10,
                          polling_interval=0.02, inbox_interval=0.05, heartbeat_interval=0.2,
                          dead_after=dead_after, executor_id=EXECUTOR)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    runtime.launch()
    print("ready", runtime.executor_id, flush=True)
    stop.wait()
    runtime.shutdown()


if __name__ == "__main__":
    main()
