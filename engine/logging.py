"""Structured logging for plait runs (structlog): run-correlated and free of secrets.

``configure()`` sets structlog up so that every line written inside a run carries the run id,
the step, and the OpenTelemetry trace and span ids, and so that API keys, bearer tokens and
inline media never reach the output. With your own structlog setup, insert
``add_run_context`` and ``redact_secrets`` into your processor chain instead (``processors()``
shows where).
"""

from __future__ import annotations

from .telemetry._logging import add_run_context as add_run_context
from .telemetry._logging import configure as configure
from .telemetry._logging import get_logger as get_logger
from .telemetry._logging import processors as processors
from .telemetry._logging import redact_secrets as redact_secrets

__all__ = ["add_run_context", "configure", "get_logger", "processors", "redact_secrets"]
