"""Peak resident-set-size sampling, for the flat-memory checks of streamed transfers."""

from __future__ import annotations

import os
import threading
import time
from typing import Self

__all__ = ["RssSampler"]


class RssSampler:
    """Samples this process's RSS every few ms in a thread; ``peak - base`` is the growth."""

    def __init__(self) -> None:
        self.peak = self.base = self.current()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def current() -> int:
        """The resident set size now, in bytes (Linux)."""
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.current())
            time.sleep(0.005)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
