"""DBOS worker processes on a real PostgreSQL: draining a queue, surviving a SIGKILLed worker."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from realservers import PostgresServer

from plait import PlaitError
from plait.dbos import DBOSRuntime

APP = Path(__file__).with_name("dbos_worker_app.py")
RUNS = 300


@pytest.fixture
def database(postgres_server: PostgresServer) -> Iterator[str]:
    name = "w" + secrets.token_hex(4)
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"create database {name}")
    url = postgres_server.url(name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("create table step_starts (run text, step text, executor text, at_ms bigint)")
    yield url
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"drop database {name} with (force)")


def start_workers(url: str, count: int) -> list[tuple[subprocess.Popen[bytes], str]]:
    procs = [subprocess.Popen([sys.executable, str(APP), url], stdout=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(APP.parent)})
             for _ in range(count)]
    workers = []
    for proc in procs:
        assert proc.stdout is not None
        words = proc.stdout.readline().split()
        assert words[:1] == [b"ready"], "worker did not start"
        workers.append((proc, words[1].decode()))
    return workers


def stop_workers(workers: list[tuple[subprocess.Popen[bytes], str]]) -> None:
    for proc, _ in workers:
        if proc.poll() is None:
            proc.terminate()
    for proc, _ in workers:
        proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()


def enqueue_all(url: str, client: Any, options: Any, runs: int) -> list[Any]:
    """Enqueue in one transaction: one-by-one enqueues crawl while workers load both cores."""
    import sqlalchemy as sa

    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as conn:
            return [client.enqueue_in_transaction(conn, options, i) for i in range(runs)]
    finally:
        engine.dispose()


def query(url: str, sql: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()  # type: ignore[arg-type]


@pytest.mark.slow
def test_three_workers_drain_the_queue_and_survive_a_sigkill(database: str) -> None:
    from dbos import DBOSClient, EnqueueOptions

    workers = start_workers(database, 3)
    client = DBOSClient(system_database_url=database)
    try:
        options = EnqueueOptions(queue_name="plait-tests", workflow_name="three_logged_steps")
        handles = enqueue_all(database, client, options, RUNS)
        victim, victim_id = workers[0]
        # Kill the first worker while it has runs in flight, well before the queue is drained.
        deadline = time.monotonic() + 30
        while query(database, "select count(*) from step_starts where executor = "
                              f"'{victim_id}'")[0][0] < 15:
            assert time.monotonic() < deadline, "the first worker never took any runs"
            time.sleep(0.01)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        results = [h.get_result(polling_interval_sec=0.05) for h in handles]
    finally:
        client.destroy()
        stop_workers(workers)

    # No run lost, every result right.
    assert results == [(i + 1) * 2 - 3 for i in range(RUNS)]
    statuses = query(database, "select status, count(*) from dbos.workflow_status "
                               "where name = 'three_logged_steps' group by status")
    assert statuses == [("SUCCESS", RUNS)]
    # The victim's unfinished runs were finished by the others...
    taken_over = query(database, f"""
        select count(distinct run) from step_starts s
        where exists (select 1 from step_starts v where v.run = s.run
                      and v.executor = '{victim_id}')
          and s.executor <> '{victim_id}'""")[0][0]
    assert isinstance(taken_over, int) and taken_over > 0
    # ...and no step whose completion DBOS had recorded ever started again.
    rerun_after_completion = query(database, """
        select s.run, s.step from step_starts s
        join dbos.operation_outputs o
          on o.workflow_uuid = s.run and o.function_name like '%' || s.step
        where s.at_ms > o.completed_at_epoch_ms""")
    assert rerun_after_completion == []
    # Every step ran at least once per run; repeats only for steps cut short by the kill.
    per_step = query(database, "select count(distinct (run, step)) from step_starts")[0][0]
    assert per_step == RUNS * 3


def test_only_one_runtime_per_process(postgres_server: PostgresServer, tmp_path: Path) -> None:
    first = DBOSRuntime(f"sqlite:///{tmp_path / 'one.sqlite'}", heartbeat_interval=0.1,
                        dead_after=1.0)
    first.launch()
    try:
        with pytest.raises(PlaitError, match="already launched"):
            DBOSRuntime(f"sqlite:///{tmp_path / 'two.sqlite'}").launch()
        assert "sqlite" not in repr(first)
    finally:
        first.shutdown()
    with pytest.raises(ValueError, match="dead_after"):
        DBOSRuntime("sqlite:///x", heartbeat_interval=2, dead_after=1)
