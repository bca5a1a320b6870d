"""The benchmark's three-step pipeline as a plait workflow, served on ``plait.dbos``."""

from __future__ import annotations

from typing import Any

from plait import Event, StartEvent, StopEvent, Workflow, step


class Go(StartEvent):
    x: int


class Added(Event):
    x: int


class Doubled(Event):
    x: int


class ThreeSteps(Workflow[Go, int]):
    @step
    async def add_one(self, ev: Go) -> Added:
        return Added(x=ev.x + 1)

    @step
    async def double(self, ev: Added) -> Doubled:
        return Doubled(x=ev.x * 2)

    @step
    async def minus_three(self, ev: Doubled) -> StopEvent:
        return StopEvent(result=ev.x - 3)


def serve_plait(url: str, concurrency: int, queue: str, poll: float) -> None:
    """Launch a DBOSRuntime worker on ``queue`` (returns once it is serving)."""
    from plait.dbos import DBOSRuntime

    DBOSRuntime(url, queue=queue, worker_concurrency=concurrency,
                polling_interval=poll).launch()


def enqueue_plait(url: str, runs: int, queue: str) -> list[Any]:
    """Enqueue ``runs`` runs in one transaction and return their results, in order."""
    import anyio

    from plait.dbos import DBOSRuntime

    async def main() -> list[Any]:
        runtime = DBOSRuntime(url, queue=queue)
        try:
            handles = await runtime.start_many(ThreeSteps, [Go(x=i) for i in range(runs)])
            return [await h.result(poll_interval=0.01) for h in handles]
        finally:
            await runtime.aclose()

    return anyio.run(main)
