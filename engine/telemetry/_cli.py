"""``plait demo --trace``: run the demo with in-memory tracing and print the span tree."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import anyio

__all__ = ["traced_demo"]


def traced_demo(out: Callable[[str], object] = print) -> int:
    """Run the demo pipeline traced, then print its spans as a tree; returns the exit status."""
    from .._demo import run_demo
    from ..testing import SpanCapture
    from ._hooks import OTelHooks

    try:
        capture = SpanCapture()
    except ImportError as exc:
        out(f"plait demo --trace: {exc}")
        return 2
    hooks = OTelHooks(tracer_provider=capture.tracer_provider,
                      meter_provider=capture.meter_provider)
    anyio.run(partial(run_demo, out, hooks=hooks))
    out("")
    out("trace (span, duration):")
    out(capture.tree())
    capture.tracer_provider.shutdown()
    return 0
