"""The caller's side of a running workflow: ``ctx.wait_for`` and ``run.send``.

A step parks in ``wait_for`` (announced on the caller's stream as ``InputRequired``); the caller's
``run.send`` answers the first matching waiter (in this run or a child run), feeds the step that
takes the event, or keeps it in the mailbox for a later ``wait_for``. Answers are recorded on
the job so a step re-run after a restart gets them again, in order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._backend import TimedOut
from ._checkpoint import SavedEvent, decode_event
from ._errors import PlaitError, WorkflowCancelled
from ._events import Event, InputRequired, event_type_name
from ._jobs import Job, Waiter
from ._stream import EventStream

if TYPE_CHECKING:
    from ._runtime import Runtime

__all__ = ["answer", "send", "wait_for"]


async def wait_for(rt: Runtime, job: Job, event_type: type[Event],
                   where: Callable[[Any], bool] | None, timeout: float | None,
                   prompt: Any) -> Event:
    """Park ``job`` until the caller sends a matching event (or replay a saved answer)."""
    n = job.waits
    job.waits += 1
    answers = job.answers
    if answers is None:
        answers = job.answers = []
    if n < len(answers):
        saved = answers[n]
        if isinstance(saved, SavedEvent):
            known = dict(rt.graph.types)
            known[event_type_name(event_type)] = event_type
            saved = answers[n] = decode_event(saved, known)
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
