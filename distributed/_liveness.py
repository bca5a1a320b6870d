"""Worker heartbeats, and taking over the runs of workers that stopped beating.

DBOS recovers a process's unfinished workflows when a process with the same executor id starts
again. Across machines that is not enough: a worker that is killed and never comes back leaves
its runs pending. So every worker writes a heartbeat row, and every worker looks for rows that
went stale; whoever deletes a stale row (one ``DELETE`` decides the race) re-enqueues that
executor's pending workflows through DBOS's own recovery, and any live worker continues them
from their last checkpointed step.

Clocks: heartbeats carry the writer's wall clock, so machines need ordinary clock sync (NTP);
``dead_after`` should be many heartbeat intervals.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import sqlalchemy as sa

from ._tables import WORKERS

__all__ = ["Heartbeat"]


class Heartbeat:
    """A thread that keeps this worker's row fresh and recovers dead workers' runs."""

    def __init__(self, engine: sa.Engine, executor_id: str, *, interval: float,
                 dead_after: float, recover: Callable[[str], object]) -> None:
        self._engine = engine
        self.executor_id = executor_id
        self.interval = interval
        self.dead_after = dead_after
        self._recover = recover
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="plait-heartbeat", daemon=True)
        self.recovered: list[str] = []

    def start(self) -> None:
        """Write the first beat and start the thread."""
        self.beat()
        self._thread.start()

    def stop(self) -> None:
        """Stop beating and mark this worker stale at once, so that the next live worker's
        reap re-enqueues whatever this one leaves unfinished (nothing, after a drain)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        with self._engine.begin() as conn:
            conn.execute(WORKERS.update().where(WORKERS.c.executor_id == self.executor_id)
                         .values(last_seen=0.0))

    def beat(self) -> None:
        """Write this worker's heartbeat now."""
        now = time.time()
        with self._engine.begin() as conn:
            updated = conn.execute(WORKERS.update()
                                   .where(WORKERS.c.executor_id == self.executor_id)
                                   .values(last_seen=now)).rowcount
            if not updated:
                conn.execute(WORKERS.insert().values(executor_id=self.executor_id,
                                                     last_seen=now))

    def reap(self) -> list[str]:
        """Claim every stale worker (one process wins each) and recover its pending runs."""
        cutoff = time.time() - self.dead_after
        with self._engine.begin() as conn:
            stale = [row[0] for row in conn.execute(
                sa.select(WORKERS.c.executor_id).where(WORKERS.c.last_seen < cutoff))]
        claimed = []
        for executor_id in stale:
            with self._engine.begin() as conn:
                won = conn.execute(WORKERS.delete().where(
                    WORKERS.c.executor_id == executor_id,
                    WORKERS.c.last_seen < cutoff)).rowcount
            if won:
                self._recover(executor_id)
                claimed.append(executor_id)
        self.recovered.extend(claimed)
        return claimed

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.beat()
                self.reap()
            except sa.exc.SQLAlchemyError:
                continue  # the database is briefly unreachable: try again next beat
