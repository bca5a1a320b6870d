"""The caller's side of a running workflow: ``ctx.wait_for``, ``run.send`` and ``ctx.sleep``.

A step parks in ``wait_for`` (announced on the caller's stream as ``InputRequired``); the caller's
``run.send`` answers the first matching waiter (in this run or a child run), feeds the step that
takes the event, or keeps it in the mailbox for a later ``wait_for``. Answers are recorded on
the job so a step re-run after a restart gets them again, in order. A checkpointed ``sleep`` is
a pause like a wait: its wake-up time is recorded in the same list, so a re-run step sleeps only
what is left of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from ._backend import TimedOut
from ._checkpoint import SavedEvent, decode_event
from ._errors import CheckpointError, PlaitError, WorkflowCancelled
from ._events import Event, InputRequired, event_type_name
from ._jobs import Job, Waiter
from ._stream import EventStream

if TYPE_CHECKING:
    from ._runtime import Runtime

__all__ = ["SleepUntil", "answer", "send", "sleep", "wait_for"]


class SleepUntil(Event):
    """What a checkpointed ``ctx.sleep`` records among a job's answers: when it wakes up."""

    deadline: float  # wall clock (time.time()), so it means the same in another process


def _replayed(rt: Runtime, job: Job, kind: type[Event]) -> tuple[int, list[Any], Event | None]:
    """Take the job's next pause number and the answer recorded for it, if any.

    Waits and sleeps share the numbering: the n-th pause of a step execution replays the n-th
    recorded answer after a resume.

    :raises CheckpointError: the recorded answer is of another kind (the step changed).
    """
    n = job.waits
    job.waits += 1
    answers = job.answers
    if answers is None:
        answers = job.answers = []
    if n >= len(answers):
        return n, answers, None
    saved = answers[n]
    if isinstance(saved, SavedEvent):
        known = dict(rt.graph.types)
        known[event_type_name(kind)] = kind
        saved = answers[n] = decode_event(saved, known)
    if not isinstance(saved, kind):
        raise CheckpointError(f"step {job.step.name!r} pauses for {kind.__name__} where its "
                              f"checkpoint recorded {type(saved).__name__}")
    return n, answers, saved


async def sleep(rt: Runtime, job: Job, seconds: float) -> None:
    """Pause ``job`` for ``seconds`` (checked by the caller); checkpointed, the wake-up time
    survives a resume."""
    if rt.checkpoints is None:
        await anyio.sleep(seconds)
        return
    n, answers, saved = _replayed(rt, job, SleepUntil)
    if saved is not None:
        assert isinstance(saved, SleepUntil)
        deadline = saved.deadline
    else:
        deadline = time.time() + seconds
        # Record only where a resume will look for it (a failed wait before leaves a gap).
        if n == len(answers):
            answers.append(SleepUntil(deadline=deadline))
            await rt.save()
    await anyio.sleep(max(0.0, deadline - time.time()))


async def wait_for(rt: Runtime, job: Job, event_type: type[Event],
                   where: Callable[[Any], bool] | None, timeout: float | None,
                   prompt: Any) -> Event:
    """Park ``job`` until the caller sends a matching event (or replay a saved answer).

    :raises CheckpointError: the replayed answer is not an ``event_type``.
    """
    n, answers, saved = _replayed(rt, job, event_type)
    if saved is not None:
        return saved
    found = _take_mailbox(rt, event_type, where)
    if found is not None:
        answers.append(found)
        if rt.checkpoints is not None:
            await rt.save()
        return found
    caller = _caller_stream(rt)
    if caller is None:
        raise PlaitError(
            f"step {job.step.name!r} waits for {event_type.__name__}, but nobody can answer: "
            "start the run with Workflow.start() and answer with run.send()"
        )
    assert rt.backend is not None
    waiter = Waiter(event_type, where, rt.backend.signal(), job)
    rt.waiters.append(waiter)
    try:
        caller.put(InputRequired(step=job.step.name, event_type=event_type.__name__,
                                 waiter_id=f"{rt.run_id}/{job.id}.{n}", prompt=prompt))
        if rt.checkpoints is not None:
            await rt.save()
        if timeout is None:
            await waiter.signal.wait()
        else:
            await rt.backend.call_with_timeout(timeout, waiter.signal.wait)
    except TimedOut:
        raise TimeoutError(f"no {event_type.__name__} arrived within {timeout}s") from None
    finally:
        if waiter in rt.waiters:
            rt.waiters.remove(waiter)
    if n >= len(answers):  # woken because the run ended
        raise WorkflowCancelled(f"run {rt.run_id} ended while waiting for "
                                f"{event_type.__name__}")
    answer = answers[n]
    assert isinstance(answer, Event)
    return answer


def _caller_stream(rt: Runtime) -> EventStream | None:
    run: Runtime | None = rt
    while run is not None:
        if run.stream is not None:
            return run.stream
        run = run.parent
    return None


def answer(rt: Runtime, ev: Event) -> bool:
    """Hand ``ev`` to a matching waiter here or in a running child run."""
    for waiter in rt.waiters:
        if isinstance(ev, waiter.event_type) and (waiter.where is None or waiter.where(ev)):
            rt.waiters.remove(waiter)
            answers = waiter.job.answers
            assert answers is not None
            answers.append(ev)
            waiter.signal.set()
            return True
    return any(answer(child, ev) for child in rt.children)


def _take_mailbox(rt: Runtime, event_type: type[Event],
                  where: Callable[[Any], bool] | None) -> Event | None:
    name = event_type_name(event_type)
    for i, item in enumerate(rt.mailbox):
        if isinstance(item, SavedEvent):
            if item.type != name:
                continue
            item = rt.mailbox[i] = decode_event(item, {name: event_type})
        if isinstance(item, event_type) and (where is None or where(item)):
            del rt.mailbox[i]
            return item
    return None


async def send(rt: Runtime, ev: Event) -> None:
    """An event from the caller: answer a waiting step, feed a step, or keep it for later."""
    if not isinstance(ev, Event):
        raise TypeError(f"send takes an Event, not {type(ev).__name__}")
    if rt.finished:
        raise PlaitError(f"run {rt.run_id} has already finished")
    if answer(rt, ev):
        if rt.checkpoints is not None:
            await rt.save()
        return
    spec = rt.graph.route(type(ev))
    if spec is not None:
        # Backpressure on the caller: wait while the consuming step is far behind.
        st = rt.step_state(spec)
        stream = rt.stream
        while len(st.backlog) >= rt.send_limit and not rt.finished and not (
                stream is not None and stream.full):
            if st.room is None:
                assert rt.backend is not None
                st.room = rt.backend.signal()
            await st.room.wait()
        if rt.finished:
            raise PlaitError(f"run {rt.run_id} has already finished")
        rt.send_event(None, ev)
        return
    rt.mailbox.append(ev)
    if rt.checkpoints is not None:
        await rt.save()
