"""The run's event stream to its caller: bounded, single reader, closed when the run ends.

Writers never block inside ``write_to_stream`` (it is a plain method a step can call anywhere);
instead a worker checks ``full`` between step executions and waits for the reader there. The
bound only applies once the caller has started reading (before that nobody could drain it, so
waiting would stall the run), and once the caller shows it will not read (``Run.result()`` before
``events()``) the stream discards.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from ._backend import Signal
from ._events import Event

__all__ = ["EventStream"]


class EventStream:
    """A deque plus two wake-ups: one for the reader, one for writers waiting for room."""

    __slots__ = ("_items", "_limit", "_new_signal", "_reader", "_room", "closed", "discarding",
                 "on_block", "reading")

    def __init__(self, new_signal: Callable[[], Signal], limit: int) -> None:
        self._items: deque[Event] = deque()
        self._limit = limit
        self._new_signal = new_signal
        self._reader: Signal | None = None
        self._room: Signal | None = None
        self.closed = False
        self.discarding = False
        self.reading = False
        self.on_block: Callable[[], None] | None = None  # called before a writer waits

    def put(self, ev: Event) -> None:
        """Append ``ev`` for the reader (dropped once the stream is closed or discarding)."""
        if self.closed or self.discarding:
            return
        self._items.append(ev)
        reader = self._reader
        if reader is not None:
            self._reader = None
            reader.set()

    @property
    def full(self) -> bool:
        """Whether writers should wait for the reader before producing more."""
        return (len(self._items) >= self._limit and self.reading and not self.discarding
                and not self.closed)

    async def wait_for_room(self) -> None:
        """Wait until the reader has taken enough (or the stream closed or started discarding)."""
        while self.full:
            if self.on_block is not None:
                self.on_block()
            if self._room is None:
                self._room = self._new_signal()
            await self._room.wait()

    def _wake_writers(self) -> None:
        room = self._room
        if room is not None:
            self._room = None
            room.set()

    def discard(self) -> None:
        """Nobody will read: drop what is buffered and everything written from now on."""
        self.discarding = True
        self._items.clear()
        self._wake_writers()

    def close(self) -> None:
        """The run ended: the reader gets what is buffered, then the end of the stream."""
        self.closed = True
        reader = self._reader
        if reader is not None:
            self._reader = None
            reader.set()
        self._wake_writers()

    async def get(self) -> Event | None:
        """The next event, or ``None`` once the stream is closed and drained."""
        self.reading = True
        while not self._items:
            if self.closed:
                return None
            signal = self._reader = self._new_signal()
            await signal.wait()
        ev = self._items.popleft()
        if self._room is not None and len(self._items) < self._limit:
            self._wake_writers()
        return ev
