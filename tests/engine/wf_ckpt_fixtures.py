"""Workflows for the checkpoint tests, importable by name so a second process can resume them.

Run as a script it is the child process of the kill / pause tests:

    python wf_ckpt_fixtures.py start|resume|ask|answer DB LOG BACKEND [RUN_ID]
"""

from __future__ import annotations

import os
import sys

import anyio
import msgspec

from plait import Context, Event, InputRequired, StartEvent, StopEvent, Workflow, step
from plait.stores import SQLiteCheckpointStore


class Go(StartEvent):
    n: int


class Item(Event):
    i: int


class Done(Event):
    i: int


class Total(Event):
    v: int


class Approval(Event):
    ok: bool


class Notes(msgspec.Struct):
    seen: list[str] = []


def log(path: str, ctx: Context, what: str) -> None:
    """One line per step execution: what, attempt, idempotency key (fsynced: we get killed)."""
    with open(path, "a") as f:
        f.write(f"{what} {ctx.attempt} {ctx.idempotency_key}\n")
        f.flush()
        os.fsync(f.fileno())


class Killable(Workflow[Go, int]):
    """split -> work (2 workers; item 1 hangs on its first attempt) -> join -> finish."""

    state_type = Notes
    log_path = ""

    @step
    async def split(self, ev: Go, ctx: Context[Notes]) -> list[Item]:
        log(self.log_path, ctx, "split")
        ctx.state.seen.append("split")
        return [Item(i=i) for i in range(ev.n)]

    @step(workers=2)
    async def work(self, ev: Item, ctx: Context[Notes]) -> Done:
        log(self.log_path, ctx, f"work{ev.i}")
        if ev.i == 1 and ctx.attempt == 1:
            await anyio.sleep(60)  # killed here
        ctx.state.seen.append(f"work{ev.i}")
        return Done(i=ev.i)

    @step
    async def join(self, evs: list[Done], ctx: Context[Notes]) -> Total:
        log(self.log_path, ctx, "join")
        return Total(v=sum(e.i for e in evs))

    @step
    async def finish(self, ev: Total, ctx: Context[Notes]) -> StopEvent:
        log(self.log_path, ctx, "finish")
        return StopEvent(result=ev.v * 10 + len(ctx.state.seen))


class Paused(Workflow[Go, str]):
    log_path = ""

    @step
    async def prep(self, ev: Go, ctx: Context) -> Total:
        log(self.log_path, ctx, "prep")
        return Total(v=ev.n)

    @step
    async def ask(self, ev: Total, ctx: Context) -> StopEvent:
        log(self.log_path, ctx, "ask")
        answer = await ctx.wait_for(Approval, prompt="ok?")
        log(self.log_path, ctx, "answered")
        return StopEvent(result=f"{ev.v}:{answer.ok}")


async def _child(mode: str, db: str, log_path: str, run_id: str) -> None:
    store = SQLiteCheckpointStore(db)
    Killable.log_path = Paused.log_path = log_path
    if mode == "start":
        print(await Killable(checkpoints=store).run(n=4, run_id=run_id), flush=True)
    elif mode == "resume":
        print(await Killable.resume(run_id, store=store), flush=True)
    elif mode == "ask":
        async with Paused(checkpoints=store).start(n=5, run_id=run_id) as run:
            async for ev in run.events():
                if isinstance(ev, InputRequired):
                    print("waiting", flush=True)
                    break  # leaving the block stops the run; its checkpoint stays
    elif mode == "answer":
        async with Paused().resume(run_id, store=store) as run:
            async for ev in run.events():
                if isinstance(ev, InputRequired):
                    await run.send(Approval(ok=True))
            print(await run.result(), flush=True)


if __name__ == "__main__":
    mode, db, log_file, backend, rid = sys.argv[1:6]
    anyio.run(_child, mode, db, log_file, rid, backend=backend)
