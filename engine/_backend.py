"""The few concurrency primitives the runtime needs, cheapest per event loop.

On asyncio the runtime spawns plain tasks, waits on ``asyncio.Event`` and times steps out with
``asyncio.timeout``: anyio's task groups, memory streams and cancel scopes cost several times
more per hop (DESIGN.md, cost table). Any other backend (trio) goes through anyio, which is
correct everywhere and only a little slower. Everything a run spawns is cancelled and awaited
before the run returns, so ``finally`` blocks in steps always run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio
import anyio.abc

try:  # trio depends on sniffio; an asyncio-only install may not have it
    import sniffio
except ImportError:  # pragma: no cover - depends on the environment
    sniffio = None  # type: ignore[assignment]

__all__ = ["AnyioBackend", "AsyncioBackend", "Backend", "Signal", "TimedOut", "TrioBackend",
           "current_backend"]


class TimedOut(TimeoutError):
    """A call given to ``Backend.call_with_timeout`` ran out of time (never a step's own error)."""


class Signal(Protocol):
    """A one-shot flag a task can wait on."""

    def set(self) -> None: ...
    def is_set(self) -> bool: ...
    async def wait(self) -> Any: ...


class Backend(Protocol):
    """Spawning, signalling and timeouts for one run."""

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None: ...
    async def run_inline(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None: ...
    def interrupt(self) -> None: ...
    def signal(self) -> Signal: ...
    async def call_with_timeout(self, delay: float, fn: Callable[..., Awaitable[Any]],
                                *args: Any) -> Any: ...
    async def aclose(self) -> None: ...


class AsyncioBackend:
    """Plain asyncio tasks, tracked so the run can cancel and await them."""

    __slots__ = ("_host", "_interrupted", "_loop", "_tasks")

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._host: asyncio.Task[Any] | None = None
        self._interrupted = False

    async def run_inline(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Await ``fn(*args)`` in the calling task, stoppable by ``interrupt()``.

        This is how a run executes its first chain of steps without starting a task: a cancel
        request we sent ourselves is absorbed here (``uncancel``); any other cancellation
        propagates.
        """
        host = asyncio.current_task()
        self._host = host
        try:
            await fn(*args)
        except asyncio.CancelledError:
            if not self._interrupted or host is None:
                raise
            host.uncancel()
        finally:
            self._host = None

    def interrupt(self) -> None:
        """Stop whatever ``run_inline`` is awaiting (no-op from the inline task itself)."""
        host = self._host
        if host is not None and host is not asyncio.current_task() and not self._interrupted:
            self._interrupted = True
            host.cancel()

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        task: asyncio.Task[Any] = self._loop.create_task(fn(*args))  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def signal(self) -> Signal:
        return asyncio.Event()

    async def call_with_timeout(self, delay: float, fn: Callable[..., Awaitable[Any]],
                                *args: Any) -> Any:
        cm = asyncio.timeout(delay)
        try:
            async with cm:
                return await fn(*args)
        except TimeoutError:
            if cm.expired():
                raise TimedOut from None
            raise

    async def aclose(self) -> None:
        # Tasks that already returned may still be in the set (done-callbacks run on the next
        # loop iteration): skip the shielded wait when nothing is actually running.
        if not self._tasks or all(task.done() for task in self._tasks):
            return
        # Shielded: the caller may itself be cancelled (anyio re-delivers cancellation on every
        # await in a cancelled scope), and the children must still finish their finally blocks.
        with anyio.CancelScope(shield=True):
            while self._tasks:
                pending = list(self._tasks)
                for task in pending:
                    task.cancel()
                await asyncio.wait(pending)


class AnyioBackend:
    """anyio task group (used on trio, and wherever asyncio's shortcuts do not apply)."""

    __slots__ = ("_tg",)

    def __init__(self, tg: anyio.abc.TaskGroup) -> None:
        self._tg = tg

    async def run_inline(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Await ``fn(*args)`` in the calling task (the task group's host)."""
        await fn(*args)

    def interrupt(self) -> None:
        """Cancel the task group: the inline chain and every spawned task stop."""
        self._tg.cancel_scope.cancel()

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        self._tg.start_soon(fn, *args)  # type: ignore[arg-type]

    def signal(self) -> Signal:
        return anyio.Event()

    async def call_with_timeout(self, delay: float, fn: Callable[..., Awaitable[Any]],
                                *args: Any) -> Any:
        with anyio.move_on_after(delay) as scope:
            return await fn(*args)
        if scope.cancelled_caught:
            raise TimedOut
        raise AssertionError("unreachable: the call neither returned nor timed out")

    async def aclose(self) -> None:
        self._tg.cancel_scope.cancel()


class TrioBackend(AnyioBackend):
    """The same as ``AnyioBackend`` over a native trio nursery (skips anyio's wrappers)."""

    __slots__ = ()

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        self._tg.start_soon(fn, *args)  # type: ignore[arg-type]

    def signal(self) -> Signal:
        import trio

        return trio.Event()


def current_backend() -> str:
    """Name of the running async library ("asyncio", "trio")."""
    if sniffio is not None:
        return sniffio.current_async_library()
    return "asyncio" if asyncio._get_running_loop() is not None else "unknown"

