"""Structured logging for plait runs (structlog): run-correlated and free of secrets.

``configure()`` sets up structlog so that every line written inside a run carries the run id,
the step, and the OpenTelemetry trace and span ids, and so that API keys, bearer tokens and
inline media never reach the output. Users with their own structlog setup can insert
``add_run_context`` and ``redact_secrets`` into their processor chain instead.
"""

from __future__ import annotations

import logging as _stdlib_logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog
from opentelemetry import trace

from . import _runctx
from ._redact import redact

__all__ = ["add_run_context", "configure", "get_logger", "processors", "redact_secrets"]


def add_run_context(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: add run id, workflow, step, attempt, trace id and span id."""
    bound = _runctx.current()
    if bound is not None:
        run, step, attempt = bound
        event_dict.setdefault("run_id", run.run_id)
        event_dict.setdefault("workflow", run.workflow)
        event_dict.setdefault("step", step)
        event_dict.setdefault("attempt", attempt)
    span_context = trace.get_current_span().get_span_context()
    if span_context.is_valid:
        event_dict.setdefault("trace_id", format(span_context.trace_id, "032x"))
        event_dict.setdefault("span_id", format(span_context.span_id, "016x"))
    return event_dict


def redact_secrets(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: remove credentials and inline media from every value, at any depth."""
    cleaned: dict[str, Any] = redact(dict(event_dict), stringify=True)
    event_dict.clear()
    event_dict.update(cleaned)
    return event_dict


def processors(*, json: bool = False) -> list[Any]:
    """The processor chain ``configure`` installs, for callers who build their own config."""
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    return [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        add_run_context,
        structlog.processors.StackInfoRenderer(),
        # Tracebacks become text first so that redaction sees them too.
        structlog.processors.format_exc_info,
        redact_secrets,
        renderer,
    ]


def configure(*, json: bool = False, level: int | str = "INFO",
              stream: TextIO | None = None) -> None:
    """Configure structlog for plait: JSON or console lines at ``level`` on ``stream`` (stderr).

    Raises ``ValueError`` for an unknown level name.
    """
    if isinstance(level, str):
        numeric = _stdlib_logging.getLevelNamesMapping().get(level.upper())
        if numeric is None:
            raise ValueError(f"unknown log level {level!r}")
        level = numeric
    structlog.configure(
        processors=processors(json=json),
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(
            file=stream if stream is not None else sys.stderr),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str = "plait", **initial_values: Any) -> Any:
    """A structlog logger named ``name`` (plait's own modules log through ``"plait"``)."""
    return structlog.get_logger(name, **initial_values)
