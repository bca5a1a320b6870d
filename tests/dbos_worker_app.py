"""A worker process for the DBOS worker tests: three logged steps per run, served until killed.

Every step start is written to ``step_starts`` (run, step, executor, database clock) before the
step does its work, so the test can see which process ran what, and when.

    python tests/dbos_worker_app.py DATABASE_URL
"""

from __future__ import annotations

import signal
import sys
import threading
import time

import psycopg
from dbos import DBOS

from plait.dbos import DBOSRuntime

URL = sys.argv[1]
runtime = DBOSRuntime(URL, queue="plait-tests", worker_concurrency=10, polling_interval=0.02,
                      heartbeat_interval=0.2, dead_after=1.5)


_local = threading.local()


def log_start(step: str) -> None:
    conn = getattr(_local, "conn", None)
    if conn is None:  # one connection per DBOS executor thread: connecting is the slow part
        conn = _local.conn = psycopg.connect(URL, autocommit=True)
    conn.execute(
        "insert into step_starts (run, step, executor, at_ms) values "
        "(%s, %s, %s, (extract(epoch from clock_timestamp()) * 1000)::bigint)",
        (DBOS.workflow_id, step, runtime.executor_id),
    )


@DBOS.step()
def add_one(x: int) -> int:
    log_start("add_one")
    time.sleep(0.02)
    return x + 1


@DBOS.step()
def double(x: int) -> int:
    log_start("double")
    time.sleep(0.02)
    return x * 2


@DBOS.step()
def minus_three(x: int) -> int:
    log_start("minus_three")
    time.sleep(0.02)
    return x - 3


@DBOS.workflow(name="three_logged_steps")
def three_logged_steps(x: int) -> int:
    return minus_three(double(add_one(x)))


if __name__ == "__main__":
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    runtime.launch()
    print("ready", runtime.executor_id, flush=True)
    stop.wait()
    runtime.shutdown()
