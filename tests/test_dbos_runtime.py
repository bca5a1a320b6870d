"""plait workflows on DBOSRuntime with worker processes on a real PostgreSQL."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import psycopg
import pytest
from dbos_plait_app import Answer, AskHuman, Boom, Go, Nap, Napper, Progress, ThreeSteps
from realservers import PostgresServer

from plait import InputRequired, RunFailed, WorkflowCancelled
from plait.dbos import DBOSRuntime

TESTS = Path(__file__).parent
RUNS = 300
Worker = tuple[subprocess.Popen[bytes], str]


@pytest.fixture
def database(postgres_server: PostgresServer) -> Iterator[str]:
    name = "r" + secrets.token_hex(4)
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"create database {name}")
    url = postgres_server.url(name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("create table step_starts "
                     "(run text, step text, attempt int, executor text, at_ms bigint)")
    yield url
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"drop database {name} with (force)")


def start_worker(url: str, name: str) -> Worker:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import dbos_plait_app as app; app.main()", url],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(TESTS), "PLAIT_TEST_DB": url,
             "PLAIT_TEST_EXECUTOR": name},
    )
    return proc, name


def start_cli_worker(url: str) -> Worker:
    """A worker started the way users start one: ``python -m plait.dbos worker``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "plait.dbos", "worker", "--database", url, "--queue",
         "plait-tests", "--import", "dbos_plait_app", "--concurrency", "4"],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(TESTS), "PLAIT_TEST_DB": url,
             "PLAIT_TEST_EXECUTOR": "cli"},
    )
    return proc, "cli"


def wait_ready(workers: list[Worker]) -> None:
    for proc, _ in workers:
        assert proc.stdout is not None
        first = proc.stdout.readline().split()[:2]
        assert first in ([b"ready"], [b"plait", b"worker"]) or first[:1] == [b"ready"], \
            "worker did not start"


def stop(workers: list[Worker]) -> None:
    for proc, _ in workers:
        if proc.poll() is None:
            proc.terminate()
    for proc, _ in workers:
        proc.wait(30)
        if proc.stdout is not None:
            proc.stdout.close()


def query(url: str, sql: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()  # type: ignore[arg-type]


def caller(url: str) -> DBOSRuntime:
    return DBOSRuntime(url, queue="plait-tests")


@pytest.mark.slow
def test_three_workers_drain_300_plait_runs_through_a_sigkill(database: str) -> None:
    # Processes are what is under test here; the caller runs once, on asyncio (the other
    # tests drive the caller on both backends).
    anyio.run(drain_through_a_sigkill, database, backend="asyncio")


async def drain_through_a_sigkill(database: str) -> None:
    workers = [start_worker(database, f"w{i}") for i in range(3)]
    runtime = caller(database)
    try:
        await anyio.to_thread.run_sync(wait_ready, workers)
        runs = await runtime.start_many(ThreeSteps, [Go(x=i) for i in range(RUNS)])
        victim, victim_name = workers[0]
        with anyio.fail_after(30):
            while query(database, "select count(*) from step_starts where executor = "
                                  f"'{victim_name}'")[0][0] < 15:  # type: ignore[operator]
                await anyio.sleep(0.01)
        victim.send_signal(signal.SIGKILL)
        with anyio.fail_after(60):
            results = [await run.result() for run in runs]
    finally:
        await runtime.aclose()
        stop(workers)

    assert results == [(i + 1) * 2 - 3 for i in range(RUNS)]
    assert {r.status for r in await listed(database)} == {"SUCCESS"}
    # The victim's unfinished runs were taken over by the other workers...
    taken_over = query(database, f"""
        select count(distinct run) from step_starts s where s.executor <> '{victim_name}'
        and exists (select 1 from step_starts v where v.run = s.run
                    and v.executor = '{victim_name}')""")[0][0]
    assert isinstance(taken_over, int) and taken_over > 0
    # ...without running a step again once the next one had started (the engine saves a step's
    # output before the next step runs), and a step that did run again knew it (attempt > 1).
    rerun_after_done = query(database, """
        select a.run, a.step from step_starts a join step_starts b
          on b.run = a.run and b.at_ms < a.at_ms
         and ((a.step = 'add_one' and b.step = 'double')
           or (a.step = 'double' and b.step = 'minus_three'))""")
    assert rerun_after_done == []
    repeats = query(database, "select run, step, array_agg(attempt order by at_ms) "
                              "from step_starts group by run, step having count(*) > 1")
    assert all(attempts == sorted(set(attempts)) for _, _, attempts in repeats)  # type: ignore


async def listed(url: str) -> list[object]:
    runtime = caller(url)
    try:
        return await runtime.list_runs(limit=1000)  # type: ignore[return-value]
    finally:
        await runtime.aclose()


@pytest.mark.slow
async def test_a_run_waiting_for_a_human_survives_a_restart_of_every_process(
        database: str) -> None:
    first = [start_worker(database, "first")]
    runtime = caller(database)
    try:
        await anyio.to_thread.run_sync(wait_ready, first)
        async with runtime.start(AskHuman, text="why") as run:
            run_id = run.run_id
            seen = []
            with anyio.fail_after(20):
                async for ev in run.events():
                    seen.append(ev)
                    if isinstance(ev, InputRequired):
                        break
        assert any(isinstance(ev, Progress) for ev in seen)
        assert isinstance(seen[-1], InputRequired) and seen[-1].prompt == "what now?"
    finally:
        await runtime.aclose()
        for proc, _ in first:
            proc.send_signal(signal.SIGKILL)
        stop(first)

    # Every process is gone. A new caller answers while no worker is alive...
    runtime = caller(database)
    try:
        await runtime.get_run(run_id).send(Answer(text="because"))
        # ...and a new worker takes the run over from the dead one and finishes it.
        second = [start_worker(database, "second")]
        try:
            await anyio.to_thread.run_sync(wait_ready, second)
            with anyio.fail_after(30):
                assert await runtime.get_run(run_id).result() == "because after 3"
        finally:
            stop(second)
        info = await runtime.inspect(run_id)
        assert info.status == "SUCCESS" and info.checkpoint == "done"
    finally:
        await runtime.aclose()
    starts = query(database, f"select step, executor from step_starts where run = '{run_id}' "
                             "order by at_ms")
    assert starts[0] == ("prepare", "first")  # ran once, before the restart
    assert [s for s, _ in starts].count("prepare") == 1
    assert starts[-1] == ("ask", "second")  # the waiting step resumed on the new worker


@pytest.mark.slow
def test_a_sleeping_run_survives_a_worker_restart_and_wakes_at_its_deadline(
        database: str) -> None:
    # Worker processes are under test; the caller runs once, on asyncio.
    anyio.run(sleep_through_a_sigkill, database, backend="asyncio")


async def sleep_through_a_sigkill(database: str) -> None:
    nap = 4.0
    first = [start_worker(database, "first")]
    second: list[Worker] = []
    runtime = caller(database)
    try:
        await anyio.to_thread.run_sync(wait_ready, first)
        [run] = await runtime.start_many(Napper, [Nap(seconds=nap)])
        with anyio.fail_after(20):
            while not query(database, f"select 1 from step_starts where run = '{run.run_id}'"):
                await anyio.sleep(0.01)
        await anyio.sleep(1.0)  # a quarter of the nap done
        first[0][0].send_signal(signal.SIGKILL)
        second = [start_worker(database, "second")]
        await anyio.to_thread.run_sync(wait_ready, second)
        with anyio.fail_after(30):
            woke = await run.result()
    finally:
        await runtime.aclose()
        stop(first + second)
    starts = query(database, f"select executor, at_ms from step_starts where run = '{run.run_id}'"
                             " order by at_ms")
    assert [e for e, _ in starts] == ["first", "second"]  # the nap resumed on the new worker
    began = int(starts[0][1]) / 1000  # type: ignore[call-overload]
    # It woke at the deadline set before the kill; sleeping the whole nap again on the new
    # worker (started >= 1 s in, recovering after dead_after = 1.5 s) would take > 6.5 s.
    assert nap - 0.05 <= woke - began < nap + 1.5, woke - began


def cli(*argv: str) -> str:
    """Run ``plait ...`` in this process and return what it printed."""
    import contextlib
    import io

    from plait.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()


@pytest.mark.slow
async def test_cancel_resume_failures_and_the_runs_command(database: str) -> None:
    workers = [start_cli_worker(database)]
    runtime = caller(database)
    try:
        await anyio.to_thread.run_sync(wait_ready, workers)
        with anyio.fail_after(30):
            # A failing step reaches the caller as RunFailed naming the original error.
            with pytest.raises(RunFailed) as info:
                await runtime.run(Boom, x=4)
            assert "StepFailed" in str(info.value) and info.value.error_type == "StepFailed"
            # A waiting run can be cancelled, then resumed from its checkpoint.
            async with runtime.start(AskHuman, text="hmm") as run:
                async for ev in run.events():
                    if isinstance(ev, InputRequired):
                        break
                await run.cancel()
                with pytest.raises(WorkflowCancelled):
                    await run.result()
            shown = await anyio.to_thread.run_sync(
                lambda: cli("runs", "--database", database, "--queue", "plait-tests",
                            "inspect", run.run_id))
            assert "status: CANCELLED" in shown and "pending_steps: ['ask']" in shown
            assert "checkpoint: running" in shown and "dbos_plait_app:AskHuman" in shown
            resumed = await runtime.resume(run.run_id)
            await resumed.send(Answer(text="fine"))
            assert await resumed.result() == "fine after 3"
        statuses = {r.run_id: r.status for r in await runtime.list_runs()}
        assert statuses[run.run_id] == "SUCCESS" and "ERROR" in statuses.values()
        listing = await anyio.to_thread.run_sync(
            lambda: cli("runs", "--database", database, "--queue", "plait-tests", "list"))
        assert f"{run.run_id}  SUCCESS" in listing and "ERROR" in listing
    finally:
        await runtime.aclose()
        stop(workers)
    assert query(database, f"select count(*) from step_starts where run = '{run.run_id}' "
                           "and step = 'prepare'") == [(1,)]


def test_workflows_must_be_importable_by_workers(tmp_path: Path) -> None:
    from plait import PlaitError, StopEvent, Workflow, step

    class Local(Workflow[Go, int]):
        @step
        async def s(self, ev: Go) -> StopEvent:
            return StopEvent(result=ev.x)

    runtime = DBOSRuntime(f"sqlite:///{tmp_path / 'x.sqlite'}")
    with pytest.raises(PlaitError, match="importable"):
        runtime.start(Local, x=1)
    assert "sqlite" not in repr(runtime)


def test_one_machine_deployment_on_sqlite(tmp_path: Path) -> None:
    # SQLite is slow to commit; once, on asyncio, is enough to show the same code serves it.
    anyio.run(sqlite_deployment, f"sqlite:///{tmp_path / 'plait.sqlite'}", backend="asyncio")


async def sqlite_deployment(url: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import dbos_plait_app as app; app.main()", url],
        stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(TESTS), "PLAIT_TEST_DB": ""},
    )
    runtime = caller(url)
    try:
        await anyio.to_thread.run_sync(wait_ready, [(proc, "sqlite")])
        with anyio.fail_after(30):
            runs = await runtime.start_many(ThreeSteps, [Go(x=i) for i in range(20)])
            assert [await r.result() for r in runs] == [(i + 1) * 2 - 3 for i in range(20)]
            assert await runtime.run(ThreeSteps, x=10) == 19
    finally:
        await runtime.aclose()
        stop([(proc, "sqlite")])


async def test_a_finished_run_is_never_checkpointed_as_running_without_work() -> None:
    # What distributed recovery relies on: a worker killed between two saves must leave a
    # checkpoint that still has work in it (or "done"), never one that resumes into
    # WorkflowStalled on another worker.
    from plait._checkpoint import decode_checkpoint

    saved: list[tuple[str, int]] = []

    class Recorder:
        async def save(self, run_id: str, seq: int, workflow: str, status: str,
                       data: bytes) -> None:
            saved.append((status, len(decode_checkpoint(data).jobs)))

        async def load(self, run_id: str) -> bytes:
            raise AssertionError("not resumed here")

        async def delete(self, run_id: str) -> None:
            return None

    assert await ThreeSteps().run(x=5, checkpoints=Recorder()) == 9
    assert saved[-1] == ("done", 0)
    assert all(jobs > 0 for status, jobs in saved if status == "running")
