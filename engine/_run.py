"""The caller's side of a streamed run: ``async with wf.start(...) as run``.

``RunStarter`` is what ``start()`` and ``resume()`` return: an async context manager that hosts
the run in a task group (so the run can never outlive the block), and also awaitable for the
plain "run it and give me the result" use. ``Run`` is the handle inside the block.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from types import TracebackType
from typing import Any, Generic

import anyio
import anyio.abc
from typing_extensions import TypeVar

from ._events import Event
from ._runtime import Runtime
from ._stream import EventStream

__all__ = ["Run", "RunStarter"]

OutT = TypeVar("OutT", default=Any)


class _Events:
    """Async iterator over the run's stream; ends when the run ends, whatever the outcome."""

    __slots__ = ("_stream",)

    def __init__(self, stream: EventStream) -> None:
        self._stream = stream

    def __aiter__(self) -> _Events:
        return self

    async def __anext__(self) -> Event:
        ev = await self._stream.get()
        if ev is None:
            raise StopAsyncIteration
        return ev


class Run(Generic[OutT]):
    """A run in progress: stream its events, answer its questions, await or cancel it."""

    __slots__ = ("_rt",)

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    @property
    def run_id(self) -> str:
        """The run's id (use it with ``Workflow.resume``)."""
        return self._rt.run_id

    @property
    def state(self) -> Any:
        """The run's state object (live: steps may still be changing it)."""
        return self._rt.state

    @property
    def done(self) -> bool:
        """Whether the run has ended (with a result or an error)."""
        return self._rt.finished

    def events(self) -> AsyncIterator[Event]:
        """Events from ``ctx.write_to_stream``, ``StepStarted``/``StepFinished`` and
        ``InputRequired``, in order. Ends when the run ends or fails; never hangs. Calling it
        again continues where the last iterator stopped."""
        stream = self._rt.stream
        assert stream is not None
        return _Events(stream)

    async def result(self) -> OutT:
        """Wait for the end and return ``StopEvent.result`` (or the custom stop event).

        If ``events()`` was never called the stream stops buffering, so the run cannot block on
        an unread stream.

        :raises StepFailed, StepTimeout, WorkflowTimeout, WorkflowCancelled, WorkflowStalled:
            how the run ended.
        """
        stream = self._rt.stream
        if stream is not None and not stream.reading:
            stream.discard()
        await self._rt.wait_done()
        return self._rt.result()  # type: ignore[no-any-return]

    async def send(self, ev: Event) -> None:
        """Answer a step waiting in ``ctx.wait_for`` (or deliver ``ev`` to the step taking it;
        otherwise it is kept for the next matching ``wait_for``).

        :raises PlaitError: the run has already ended.
        """
        await self._rt.send(ev)

    async def cancel(self) -> None:
        """Cancel the run: running steps are cancelled (their ``finally`` blocks run), the stream
        ends, and ``result()`` raises ``WorkflowCancelled``."""
        self._rt.cancel()
        await self._rt.wait_closed()


class RunStarter(Generic[OutT]):
    """``async with`` it for a ``Run`` handle, or ``await`` it for the result."""

    __slots__ = ("_prepare", "_rt", "_tg")

    def __init__(self, prepare: Callable[[], Awaitable[tuple[Runtime, Event | None]]]) -> None:
        self._prepare = prepare
        self._tg: anyio.abc.TaskGroup | None = None
        self._rt: Runtime | None = None

    def __await__(self) -> Generator[Any, None, OutT]:
        return self._result().__await__()

    async def _result(self) -> OutT:
        async with self as run:
            return await run.result()

    async def __aenter__(self) -> Run[OutT]:
        rt, start = await self._prepare()
        self._rt = rt
        if rt.finished:  # a resumed run that had already completed
            rt.stream = EventStream(anyio.Event, 1)
            rt.stream.close()
            return Run(rt)
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        try:
            await tg.start(_host, rt, start)
        except BaseException:
            rt.cancel()
            await tg.__aexit__(None, None, None)
            raise
        return Run(rt)

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        rt, tg = self._rt, self._tg
        assert rt is not None
        if not rt.finished:
            rt.cancel()
        if tg is not None:
            # The host task never raises (outcomes are kept on the runtime), so the group exits
            # cleanly and the caller's own exception, if any, propagates unwrapped.
            await tg.__aexit__(None, None, None)


async def _host(rt: Runtime, start: Event | None, *,
                task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    rt.on_ready = task_status.started
    with contextlib.suppress(Exception):  # recorded on the runtime; Run.result() raises it
        await rt.execute(start)
