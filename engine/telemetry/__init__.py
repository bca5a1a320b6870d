"""OpenTelemetry for plait: GenAI semantic-convention spans and metrics, span trees.

Depends on ``opentelemetry-api`` only and never installs a global provider; pass
``tracer_provider`` / ``meter_provider`` (default: the globals). Message content is recorded only
when asked for (``capture_content=True`` or
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``), and never as bytes.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from . import _runctx
from ._genai import ChatCall as ChatCall
from ._genai import TracedStream as TracedStream
from ._genai import agent_span as agent_span
from ._genai import server_of as server_of
from ._genai import tool_span as tool_span
from ._hooks import OTelHooks as OTelHooks
from ._redact import redact as redact
from ._semconv import provider_name as provider_name
from ._tracing import Telemetry as Telemetry
from ._tracing import default as _default
from ._tree import format_span_tree as format_span_tree

__all__ = [
    "ChatCall",
    "OTelHooks",
    "Telemetry",
    "TracedStream",
    "agent_span",
    "current",
    "format_span_tree",
    "provider_name",
    "redact",
    "server_of",
    "tool_span",
    "use",
]


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
    info = _runctx.current()
    if info is not None and info.telemetry is not None:
        run_telemetry: Telemetry = info.telemetry
        return run_telemetry
    return _default()


@contextlib.contextmanager
def use(telemetry: Telemetry) -> Iterator[Telemetry]:
    """Bind ``telemetry`` for the block (and tasks started in it): provider calls and tool
    invocations outside a traced run use it."""
    token = _explicit.set(telemetry)
    try:
        yield telemetry
    finally:
        _explicit.reset(token)
