"""``DBOSRuntime``: one process's membership in a DBOS-backed plait deployment.

DBOS keeps workflow state and queues in one database (PostgreSQL across machines, SQLite for a
single machine). Every worker process that launches a ``DBOSRuntime`` on the same database and
queue takes runs from that queue; a worker that dies has its runs re-enqueued by the others
(see ``_liveness``). DBOS itself is a per-process singleton, so there is one runtime per process.
"""

from __future__ import annotations

import secrets
import threading
from typing import Any

from plait import PlaitError

from ._liveness import Heartbeat

__all__ = ["DBOSRuntime"]

_launched = threading.Lock()


class DBOSRuntime:
    """Join (``launch``) or leave (``shutdown``) the deployment on ``database_url``.

    ``worker_concurrency`` caps the runs this process executes at once, which is also what
    spreads a queue over several workers (without a cap the first poller takes everything).
    ``polling_interval`` is how often the queue is polled, ``heartbeat_interval`` how often this
    worker proves it is alive, and ``dead_after`` how long silence means death.
    """

    def __init__(self, database_url: str, *, app_name: str = "plait", queue: str = "plait",
                 worker_concurrency: int = 8, polling_interval: float = 0.05,
                 executor_id: str | None = None, heartbeat_interval: float = 1.0,
                 dead_after: float = 10.0) -> None:
        if dead_after <= heartbeat_interval:
            raise ValueError("dead_after must be longer than heartbeat_interval")
        self.database_url = database_url
        self.app_name = app_name
        self.queue = queue
        self.worker_concurrency = worker_concurrency
        self.polling_interval = polling_interval
        self.executor_id = executor_id or f"plait-{secrets.token_hex(6)}"
        self.heartbeat_interval = heartbeat_interval
        self.dead_after = dead_after
        self._heartbeat: Heartbeat | None = None
        self._launched = False

    def __repr__(self) -> str:  # the URL may hold a password
        return f"DBOSRuntime(app_name={self.app_name!r}, queue={self.queue!r}, " \
               f"executor_id={self.executor_id!r})"

    @property
    def recovered_executors(self) -> list[str]:
        """Dead workers whose runs this process re-enqueued."""
        return list(self._heartbeat.recovered) if self._heartbeat is not None else []

    def launch(self) -> None:
        """Start DBOS in this process and serve the queue (workflows must be defined first).

        :raises PlaitError: a DBOS runtime is already running in this process.
        """
        from dbos import DBOS

        if not _launched.acquire(blocking=False):
            raise PlaitError("a DBOSRuntime is already launched in this process")
        config: dict[str, Any] = {
            "name": self.app_name, "system_database_url": self.database_url,
            "executor_id": self.executor_id, "log_level": "WARNING",
        }
        try:
            DBOS(config=config)  # type: ignore[arg-type]
            DBOS.launch()
            DBOS.register_queue(self.queue, worker_concurrency=self.worker_concurrency,
                                polling_interval_sec=self.polling_interval,
                                on_conflict="always_update")
            # DBOS's own engine: same database, same driver, already configured.
            from dbos._dbos import _get_dbos_instance

            engine = _get_dbos_instance()._sys_db.engine
            self._heartbeat = Heartbeat(
                engine, self.executor_id, interval=self.heartbeat_interval,
                dead_after=self.dead_after,
                recover=lambda executor: DBOS._recover_pending_workflows([executor]),
            )
            self._heartbeat.start()
        except BaseException:
            _launched.release()
            raise
        self._launched = True

    def shutdown(self, *, wait: float = 0.0) -> None:
        """Leave the deployment: stop heartbeats, then DBOS (runs in flight resume elsewhere)."""
        from dbos import DBOS

        if not self._launched:
            return
        try:
            if self._heartbeat is not None:
                self._heartbeat.stop()
            DBOS.destroy(workflow_completion_timeout_sec=int(wait))
        finally:
            self._launched = False
            _launched.release()
