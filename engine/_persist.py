"""Saving a run to its checkpoint store and loading it back.

A snapshot is taken synchronously on the event loop (so it is consistent: no step runs while
it is built) and written by the store off the loop. See ``_checkpoint`` for the format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from ._checkpoint import (
    Checkpoint,
    SavedEvent,
    SavedGroup,
    SavedJob,
    decode_event,
    encode_checkpoint,
    encode_event,
    encode_state,
)
from ._errors import CheckpointError, PlaitError, WorkflowStalled
from ._jobs import Group, Job, StepState

if TYPE_CHECKING:
    from ._runtime import Runtime

__all__ = ["claim_restored", "restore", "save", "save_final", "snapshot"]


def _encode_all(events: Any) -> list[SavedEvent]:
    return [e if isinstance(e, SavedEvent) else encode_event(e) for e in events]


def snapshot(rt: Runtime, status: str) -> Checkpoint:
    """The run's resumable state right now.

    :raises CheckpointError: an event or the state cannot be encoded.
    """
    assert rt.open_jobs is not None and rt.open_groups is not None
    jobs = []
    for job in rt.open_jobs.values():
        batch = isinstance(job.event, list | tuple)
        jobs.append(SavedJob(
            job.id, job.step.name, _encode_all(job.event if batch else [job.event]), batch,
            job.group.id if job.group is not None else 0, job.attempt,
            _encode_all(job.answers or ()),
        ))
    groups = [
        SavedGroup(
            g.id, g.parent.id if g.parent is not None else 0, g.pending,
            g.default.name if g.default is not None else None,
            {st.name: _encode_all(items) for st, items in (g.buffers or {}).items()},
        )
        for g in rt.open_groups.values()
    ]
    return Checkpoint(
        workflow=rt.graph.workflow, run_id=rt.run_id, seq=rt.next_seq(), status=status,
        next_id=rt.next_id,
        state=encode_state(rt.state) if rt.state is not None else None,
        jobs=jobs, groups=groups,
        joins={st.name: _encode_all(evs) for st, evs in rt.joins.items()},
        mailbox=_encode_all(rt.mailbox),
    )


async def save(rt: Runtime) -> None:
    """Write the current snapshot to the run's store.

    :raises CheckpointError: encoding or the store failed.
    """
    assert rt.checkpoints is not None
    cp = snapshot(rt, "running")
    await rt.checkpoints.save(rt.run_id, cp.seq, cp.workflow, cp.status, encode_checkpoint(cp))


async def save_final(rt: Runtime) -> None:
    """Record how the run ended ("done" with its stop event, or "failed")."""
    assert rt.checkpoints is not None
    failed = rt.error is not None
    cp = Checkpoint(workflow=rt.graph.workflow, run_id=rt.run_id, seq=rt.next_seq(),
                    status="failed" if failed else "done", next_id=rt.next_id,
                    state=encode_state(rt.state) if rt.state is not None else None)
    if failed:
        cp.error = type(rt.error).__name__
    elif rt.stop_event is not None:
        try:
            cp.result = encode_event(rt.stop_event)
        except PlaitError:
            cp.result = None  # an unencodable result: the run is done, its value not kept
    with anyio.CancelScope(shield=True):
        await rt.checkpoints.save(rt.run_id, cp.seq, cp.workflow, cp.status,
                                  encode_checkpoint(cp))


def restore(rt: Runtime, cp: Checkpoint) -> None:
    """Load a running checkpoint's jobs, groups and buffers into ``rt`` (before it executes).

    :raises CheckpointError: the checkpoint names steps or events this workflow lacks.
    """
    known = dict(rt.graph.types)
    steps = rt.graph.steps

    def step_named(name: str) -> StepState:
        spec = steps.get(name)
        if spec is None:
            raise CheckpointError(f"checkpoint names step {name!r}, which "
                                  f"{rt.graph.workflow} does not have")
        return rt.step_state(spec)

    groups: dict[int, Group] = {
        sg.id: Group(sg.id, None, steps.get(sg.default) if sg.default else None)
        for sg in cp.groups
    }
    for sg in cp.groups:
        g = groups[sg.id]
        g.parent = groups.get(sg.parent)
        g.pending = sg.pending
        if sg.buffers:
            g.buffers = {step_named(name): [decode_event(e, known) for e in evs]
                         for name, evs in sg.buffers.items()}
    assert rt.open_groups is not None and rt.open_jobs is not None
    rt.open_groups.update(groups)
    jobs = []
    for sj in sorted(cp.jobs, key=lambda j: j.id):
        st = step_named(sj.step)
        events = [decode_event(e, known) for e in sj.events]
        payload: Any = events[0] if not sj.batch else (
            events if st.mode == "list" else tuple(events))
        job = Job(sj.id, st, payload, groups.get(sj.group), None)
        job.attempt = sj.attempt
        job.answers = list(sj.answers)
        jobs.append(job)
        rt.open_jobs[job.id] = job
    rt.live = len(jobs)
    rt.joins = {step_named(name): [decode_event(e, known) for e in evs]
                for name, evs in cp.joins.items()}
    rt.mailbox = list(cp.mailbox)
    rt.next_id = cp.next_id
    rt.seq = cp.seq
    rt.restored = jobs


def claim_restored(rt: Runtime) -> list[Job]:
    """Give restored jobs to free worker slots (each claim counts as a new attempt)."""
    ready = []
    for job in rt.restored or ():
        st = job.step
        if st.active < st.workers:
            st.active += 1
            job.attempt += 1
            ready.append(job)
        else:
            st.backlog.append(job)
    rt.restored = None
    if not ready and rt.live == 0:
        rt.finish(WorkflowStalled(f"run {rt.run_id} has nothing left to run"))
    return ready
