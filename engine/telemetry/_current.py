"""Which ``Telemetry`` model and tool spans use at this point of the program."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from . import _runctx
from ._tracing import Telemetry, default

__all__ = ["current", "use"]

_explicit: contextvars.ContextVar[Telemetry | None] = contextvars.ContextVar(
    "plait_telemetry", default=None)


def current() -> Telemetry:
    """The ``Telemetry`` model and tool spans use here.

    In order: the one bound by ``use()``, the one of the run whose step is executing
    (``OTelHooks``), else one over the global providers.
    """
    telemetry = _explicit.get()
    if telemetry is not None:
        return telemetry
    bound = _runctx.current()
    if bound is not None and bound[0].telemetry is not None:
        run_telemetry: Telemetry = bound[0].telemetry
        return run_telemetry
    return default()


@contextlib.contextmanager
def use(telemetry: Telemetry) -> Iterator[Telemetry]:
    """Bind ``telemetry`` for the block (and tasks started in it): provider calls and tool
    invocations outside a traced run use it."""
    token = _explicit.set(telemetry)
    try:
        yield telemetry
    finally:
        _explicit.reset(token)
