"""Checkpoints and resume, in process and across real processes (SIGKILL mid-run)."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import anyio
import msgspec
import pydantic
import pytest
import wf_ckpt_fixtures as fx

from plait import (
    CheckpointError,
    CheckpointStore,
    Context,
    Event,
    InputRequired,
    RunNotFound,
    StartEvent,
    StopEvent,
    Workflow,
    step,
)
from plait._checkpoint import Checkpoint, decode_checkpoint, encode_checkpoint
from plait.stores import SQLiteCheckpointStore

HERE = pathlib.Path(__file__).resolve().parent
CHILD = str(HERE / "wf_ckpt_fixtures.py")


class Go(StartEvent):
    n: int


class Mid(Event):
    v: int


class Gate(Event):
    ok: bool


class Counts(pydantic.BaseModel):
    a: int = 0
    b: int = 0


class TwoSteps(Workflow[Go, str]):
    state_type = Counts

    @step
    async def a(self, ev: Go, ctx: Context[Counts]) -> Mid:
        ctx.state.a += 1
        return Mid(v=ev.n)

    @step
    async def b(self, ev: Mid, ctx: Context[Counts]) -> StopEvent:
        ctx.state.b += 1
        if ev.v == 0 and ctx.attempt == 1:  # hang so the caller can stop the run here
            await anyio.sleep(30)
        return StopEvent(result=f"a={ctx.state.a} b={ctx.state.b} attempt={ctx.attempt}")


def test_store_satisfies_the_protocol() -> None:
    assert isinstance(SQLiteCheckpointStore(":memory:"), CheckpointStore)


async def test_store_keeps_the_newest_sequence(tmp_path: pathlib.Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "c.db")
    await store.save("r", 2, "W", "running", b"two")
    await store.save("r", 1, "W", "running", b"one")  # arrives late: ignored
    assert await store.load("r") == b"two"
    await store.save("r", 3, "W", "done", b"three")
    assert await store.load("r") == b"three"
    assert await store.runs("done") == ["r"]
    await store.delete("r")
    with pytest.raises(RunNotFound):
        await store.load("r")
    store.close()


async def test_completed_run_is_saved_and_resume_returns_its_result(tmp_path: pathlib.Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "c.db")
    assert await TwoSteps(checkpoints=store).run(n=1, run_id="r1") == "a=1 b=1 attempt=1"
    cp = decode_checkpoint(await store.load("r1"))
    assert cp.status == "done" and cp.jobs == []
    assert await TwoSteps.resume("r1", store=store) == "a=1 b=1 attempt=1"


async def test_stopped_run_resumes_without_rerunning_completed_steps(
        tmp_path: pathlib.Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "c.db")
    with anyio.fail_after(5):
        async with TwoSteps(checkpoints=store).start(n=0, run_id="r2") as run:
            async for ev in run.events():
                if getattr(ev, "step", None) == "b":
                    break  # b is running: stop the run
    cp = decode_checkpoint(await store.load("r2"))
    assert cp.status == "running" and [j.step for j in cp.jobs] == ["b"]
    assert cp.jobs[0].attempt == 1
    with anyio.fail_after(5):
        result = await TwoSteps().resume("r2", store=store)
    # a ran once and its state change survived; b's cut-short attempt left no trace in the saved
    # state (saved before b began), and b runs again knowing it is attempt 2.
    assert result == "a=1 b=1 attempt=2"


async def test_a_new_run_reusing_a_run_id_replaces_the_old_checkpoint(
        tmp_path: pathlib.Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "c.db")
    wf = TwoSteps(checkpoints=store)
    assert await wf.run(n=1, run_id="same") == "a=1 b=1 attempt=1"
    assert await wf.run(n=2, run_id="same", state=Counts(a=5)) == "a=6 b=1 attempt=1"
    assert await TwoSteps.resume("same", store=store) == "a=6 b=1 attempt=1"
    done = decode_checkpoint(await store.load("same"))
    assert done.status == "done"
    assert Counts.model_validate(msgspec.msgpack.decode(done.state or b"")).a == 6


async def test_resume_errors(tmp_path: pathlib.Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "c.db")
    with pytest.raises(RunNotFound):
        await TwoSteps.resume("nope", store=store)
    foreign = Checkpoint(workflow="SomethingElse", run_id="foreign", seq=1, status="running",
                         next_id=1)
    await store.save("foreign", 1, "SomethingElse", "running", encode_checkpoint(foreign))
    with pytest.raises(CheckpointError, match="belongs to workflow"):
        await TwoSteps.resume("foreign", store=store)
    with pytest.raises(CheckpointError, match="needs a checkpoint store"):
        TwoSteps().resume("x")


async def test_paused_wait_is_saved_and_answered_after_resume(tmp_path: pathlib.Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "c.db")
    log = tmp_path / "log"
    fx.Paused.log_path = str(log)
    with anyio.fail_after(5):
        async with fx.Paused(checkpoints=store).start(n=2, run_id="p") as run:
            async for ev in run.events():
                if isinstance(ev, InputRequired):
                    break
        async with fx.Paused.resume("p", store=store) as run:
            await run.send(fx.Approval(ok=False))  # answered before the step asks again
            assert await run.result() == "2:False"
    lines = log.read_text().split()
    assert lines[0::3] == ["prep", "ask", "ask", "answered"]
    assert lines[1::3] == ["1", "1", "2", "2"]


def _child(mode: str, db: pathlib.Path, log: pathlib.Path, backend: str,
           run_id: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, CHILD, mode, str(db), str(log), backend, run_id],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _lines(log: pathlib.Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sigkill_mid_run_then_resume_in_a_new_process(tmp_path: pathlib.Path,
                                                      backend: str) -> None:
    db, log = tmp_path / "c.db", tmp_path / "log"
    proc = _child("start", db, log, backend, "k1")
    store = SQLiteCheckpointStore(db)
    deadline = time.monotonic() + 20
    try:
        while True:  # until the checkpoint shows items 0, 2, 3 done and item 1 in flight
            assert proc.poll() is None, "the child exited early"
            assert time.monotonic() < deadline, _lines(log)
            try:
                cp = decode_checkpoint(anyio.run(store.load, "k1"))
            except RunNotFound:
                cp = None
            if cp is not None and [j.step for j in cp.jobs] == ["work"] and cp.groups and \
                    len(cp.groups[0].buffers.get("work", [])) == 0 and \
                    sum(len(v) for v in cp.groups[0].buffers.values()) == 3:
                break
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()  # reaps the child and closes its pipes
    assert proc.returncode == -signal.SIGKILL
    before = _lines(log)
    assert sorted(w for w, _, _ in before) == ["split", "work0", "work1", "work2", "work3"]

    resumed = _child("resume", db, log, backend, "k1")
    out, err = resumed.communicate(timeout=30)
    assert resumed.returncode == 0, err
    # 0+1+2+3 = 6, and the state lists split + 4 works = 5 entries: no lost or doubled state.
    assert out.strip() == "65"
    after = _lines(log)[len(before):]
    assert [w for w, _, _ in after] == ["work1", "join", "finish"]
    first = next(line for line in before if line[0] == "work1")
    again = after[0]
    assert first[1] == "1" and again[1] == "2"  # the re-run knows it is one
    assert first[2] == again[2]  # same idempotency key
    assert decode_checkpoint(anyio.run(store.load, "k1")).status == "done"


def test_paused_run_survives_the_process_and_is_answered_later(tmp_path: pathlib.Path) -> None:
    db, log = tmp_path / "c.db", tmp_path / "log"
    first = _child("ask", db, log, "asyncio", "q1")
    out, err = first.communicate(timeout=30)
    assert first.returncode == 0 and out.strip() == "waiting", err
    second = _child("answer", db, log, "trio", "q1")
    out, err = second.communicate(timeout=30)
    assert second.returncode == 0, err
    assert out.strip() == "5:True"
    assert [w for w, _, _ in _lines(log)] == ["prep", "ask", "ask", "answered"]


async def test_checkpointed_runs_give_the_same_results(tmp_path: pathlib.Path) -> None:
    """Fan-out, nested fan-in, joins and send_event behave the same with a store attached."""
    from test_wf_fanout import Join, LooseJoin, Nested, Pipeline

    store = SQLiteCheckpointStore(tmp_path / "c.db")
    for wf_type, n in ((Pipeline, 60), (Nested, 5), (Join, 3), (LooseJoin, 4)):
        plain = await wf_type().run(n=n)
        saved = await wf_type(checkpoints=store).run(n=n, run_id=f"{wf_type.__name__}-{n}")
        assert saved == plain, wf_type
        cp = decode_checkpoint(await store.load(f"{wf_type.__name__}-{n}"))
        assert cp.status == "done" and cp.jobs == [] and cp.groups == []


async def test_a_failed_run_is_saved_as_failed_and_not_resumable(tmp_path: pathlib.Path) -> None:
    class Broken(Workflow):
        @step
        async def s(self, ev: Go) -> StopEvent:
            raise ValueError("no")

    store = SQLiteCheckpointStore(tmp_path / "c.db")
    with pytest.raises(Exception, match="failed on attempt 1"):
        await Broken(checkpoints=store).run(n=0, run_id="f")
    cp = decode_checkpoint(await store.load("f"))
    assert cp.status == "failed" and cp.error == "StepFailed"
    with pytest.raises(CheckpointError, match="failed"):
        await Broken.resume("f", store=store)
