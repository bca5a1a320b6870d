"""``plait demo --trace``: run a demo with in-memory tracing and print the span tree."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import anyio

__all__ = ["traced_demo"]


def traced_demo(out: Callable[[str], None] = print, *, engine: bool = False,
                video_path: str | None = None) -> int:
    """Run the demo (the agent pipeline, or the engine demo) traced, then print its span tree.

    Returns the exit status (2 when the OpenTelemetry SDK is not installed).
    """
    from ..testing import SpanCapture
    from ._hooks import OTelHooks

    try:
        capture = SpanCapture()
    except ImportError as exc:
        out(f"plait demo --trace: {exc}")
        return 2
    hooks = OTelHooks(tracer_provider=capture.tracer_provider,
                      meter_provider=capture.meter_provider)
    if engine:
        from .._demo import run_demo

        anyio.run(partial(run_demo, out, hooks=hooks))
    else:
        from .._agent_demo import run_pipeline

        anyio.run(partial(run_pipeline, out, video_path=video_path, hooks=hooks))
    out("")
    out("trace (span, duration):")
    out(capture.tree())
    capture.tracer_provider.shutdown()
    return 0
