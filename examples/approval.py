"""Human in the loop: a step pauses in ``ctx.wait_for`` and the caller answers with
``run.send``. With a checkpoint store the paused run survives a restart:

    python examples/approval.py ask      # starts, prints the question, exits
    python examples/approval.py answer   # resumes the same run and approves it
"""

import sys

import anyio

from plait import Context, Event, InputRequired, StartEvent, StopEvent, Workflow, step
from plait.stores import SQLiteCheckpointStore


class Order(StartEvent):
    item: str
    amount: int


class Approval(Event):
    approved: bool
    by: str


class Priced(Event):
    item: str
    total: int


class Purchase(Workflow[Order, str]):
    @step
    async def price(self, ev: Order, ctx: Context) -> Priced:
        return Priced(item=ev.item, total=ev.amount * 3)

    @step
    async def approve(self, ev: Priced, ctx: Context) -> StopEvent:
        answer = await ctx.wait_for(Approval, prompt=f"buy {ev.item} for {ev.total}?")
        verdict = "bought" if answer.approved else "declined"
        return StopEvent(result=f"{verdict} {ev.item} ({answer.by})")


STORE = SQLiteCheckpointStore("approval-example.db")


async def ask() -> None:
    async with Purchase(checkpoints=STORE).start(item="lamp", amount=7, run_id="order-1") as run:
        async for ev in run.events():
            if isinstance(ev, InputRequired):
                print("waiting for an answer:", ev.prompt)
                return  # leaving the block stops the run; its checkpoint stays


async def answer() -> None:
    async with Purchase.resume("order-1", store=STORE) as run:
        await run.send(Approval(approved=True, by="ann"))
        print(await run.result())


if __name__ == "__main__":
    anyio.run({"ask": ask, "answer": answer}[sys.argv[1] if len(sys.argv) > 1 else "ask"])
