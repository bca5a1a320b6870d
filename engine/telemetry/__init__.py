"""OpenTelemetry for plait: GenAI semantic-convention spans and metrics, span trees.

Depends on ``opentelemetry-api`` only and never installs a global provider; pass
``tracer_provider`` / ``meter_provider`` (default: the globals). Message content is recorded only
when asked for (``capture_content=True`` or
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``), and never as bytes.
"""

from __future__ import annotations

from ._current import current as current
from ._current import use as use
from ._genai import ChatCall as ChatCall
from ._genai import TracedStream as TracedStream
from ._genai import agent_span as agent_span
from ._genai import server_of as server_of
from ._genai import tool_span as tool_span
from ._hooks import OTelHooks as OTelHooks
from ._redact import redact as redact
from ._semconv import provider_name as provider_name
from ._tracing import Telemetry as Telemetry
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
