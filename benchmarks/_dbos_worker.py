"""A DBOS worker process for ``benchmarks/scale.py``: serves one queue until SIGTERM.

``bare`` registers a plain DBOS workflow of three async steps (the baseline); ``plait`` serves
the same three-step pipeline written as a plait ``Workflow`` on ``plait.dbos.DBOSRuntime``.

    python benchmarks/_dbos_worker.py {bare|plait} SYSTEM_DATABASE_URL WORKER_CONCURRENCY
"""

from __future__ import annotations

import signal
import sys
import threading

QUEUE = "bench"
POLL_SECONDS = 0.02


def serve_bare(url: str, concurrency: int) -> None:
    from dbos import DBOS

    DBOS(config={"name": "plaitbench", "system_database_url": url, "log_level": "WARNING"})

    @DBOS.step()
    async def add_one(x: int) -> int:
        return x + 1

    @DBOS.step()
    async def double(x: int) -> int:
        return x * 2

    @DBOS.step()
    async def minus_three(x: int) -> int:
        return x - 3

    @DBOS.workflow(name="three_steps")
    async def three_steps(x: int) -> int:
        return await minus_three(await double(await add_one(x)))

    DBOS.launch()
    DBOS.register_queue(QUEUE, worker_concurrency=concurrency, polling_interval_sec=POLL_SECONDS,
                        on_conflict="always_update")


def main() -> None:
    mode, url, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if mode == "bare":
        serve_bare(url, concurrency)
    else:
        from _plait_pipeline import serve_plait

        serve_plait(url, concurrency, QUEUE, POLL_SECONDS)
    print("ready", flush=True)
    stop.wait()
    from dbos import DBOS

    DBOS.destroy(workflow_completion_timeout_sec=0)


if __name__ == "__main__":
    main()
