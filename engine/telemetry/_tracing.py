"""The ``Telemetry`` object: where plait's tracer, meter and capture settings come from.

plait never installs a global provider. A ``Telemetry`` takes ``tracer_provider`` and
``meter_provider`` (defaulting to the globals at the time of use, through the API's proxies) and
owns the instruments. With no SDK installed every span is the API's non-recording span, and the
helpers check ``is_recording()`` before building any attribute, so tracing costs almost nothing.

Spans are started without being made current; callers activate them for exactly the stretch of
code that needs it (never across a ``yield``).
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Final

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from .._messages import Usage
from . import _semconv as sc
from ._capture import capture_enabled
from ._redact import redact_text

__all__ = ["Telemetry", "activate", "error_type", "record_error"]

_SCOPE: Final = "plait"
_VERSION: Final = "0.1.0"
_MAX_MESSAGE: Final = 1024

Attributes = Mapping[str, AttributeValue]


def error_type(exc: BaseException) -> str:
    """The ``error.type`` value for ``exc``: its public, fully qualified class name.

    plait's own classes are named as exported (``plait.StepFailed``, not ``plait._errors...``);
    an internal one is named by its nearest public base (an internal timeout is a
    ``TimeoutError``).
    """
    for cls in type(exc).__mro__:
        module = cls.__module__
        if module == "builtins":
            return cls.__qualname__
        if module != "plait" and not module.startswith("plait."):
            return f"{module}.{cls.__qualname__}"
        package, _, leaf = module.rpartition(".")
        if not leaf.startswith("_"):
            return f"{module}.{cls.__qualname__}"
        public = sys.modules.get(package)
        if public is not None and getattr(public, cls.__name__, None) is cls:
            return f"{package}.{cls.__qualname__}"
    return type(exc).__qualname__


def record_error(span: Span, exc: BaseException) -> None:
    """Mark ``span`` failed with ``exc``: status, ``error.type`` and a redacted exception event."""
    if not span.is_recording():
        return
    message = redact_text(str(exc))[:_MAX_MESSAGE]
    kind = error_type(exc)
    span.set_attribute(sc.ERROR_TYPE, kind)
    span.set_status(Status(StatusCode.ERROR, message or kind))
    stack = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    span.add_event("exception", {
        "exception.type": kind,
        "exception.message": message,
        "exception.stacktrace": redact_text(stack),
    })


@contextmanager
def activate(span: Span) -> Iterator[Span]:
    """Make ``span`` current for the ``with`` block only; the block must not contain a ``yield``."""
    token = otel_context.attach(trace.set_span_in_context(span))
    try:
        yield span
    finally:
        otel_context.detach(token)


class Telemetry:
    """Tracer, meter and content-capture settings for plait's spans and metrics.

    ``capture_content`` ``None`` reads ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``;
    ``latest_semconv`` ``None`` reads ``OTEL_SEMCONV_STABILITY_OPT_IN``.
    """

    def __init__(self, *, tracer_provider: trace.TracerProvider | None = None,
                 meter_provider: metrics.MeterProvider | None = None,
                 capture_content: bool | None = None,
                 latest_semconv: bool | None = None) -> None:
        self.tracer = trace.get_tracer(_SCOPE, _VERSION, tracer_provider=tracer_provider)
        meter = metrics.get_meter(_SCOPE, _VERSION, meter_provider=meter_provider)
        self.capture_content = capture_enabled(capture_content)
        self.latest = sc.latest_experimental() if latest_semconv is None else latest_semconv
        if self.latest:
            self.inference_tokens = meter.create_counter(
                sc.METRIC_INFERENCE_TOKENS, unit="{token}",
                description="Tokens used, by type and modality.")
            self.input_tokens_by_cache = meter.create_counter(
                sc.METRIC_INPUT_TOKENS_BY_CACHE, unit="{token}",
                description="Input tokens, by provider-cache outcome.")
            self.output_tokens_by_phase = meter.create_counter(
                sc.METRIC_OUTPUT_TOKENS_BY_PHASE, unit="{token}",
                description="Output tokens, by generation phase.")
            self.workflow_duration: metrics.Histogram | None = meter.create_histogram(
                sc.METRIC_WORKFLOW_DURATION, unit="s", description="Duration of a workflow run.",
                explicit_bucket_boundaries_advisory=sc.DURATION_BUCKETS)
        else:
            self.token_usage = meter.create_histogram(
                sc.METRIC_TOKEN_USAGE, unit="{token}",
                description="Number of input and output tokens used.",
                explicit_bucket_boundaries_advisory=sc.TOKEN_BUCKETS)
            self.workflow_duration = None
        self.operation_duration = meter.create_histogram(
            sc.METRIC_OPERATION_DURATION, unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=sc.DURATION_BUCKETS)
        self.time_to_first_chunk = meter.create_histogram(
            sc.METRIC_TIME_TO_FIRST_CHUNK, unit="s",
            description="Time to receive the first chunk of a streamed response.",
            explicit_bucket_boundaries_advisory=sc.TTFC_BUCKETS)
        self.step_duration = meter.create_histogram(
            sc.METRIC_STEP_DURATION, unit="s",
            description="Duration of one plait step execution.",
            explicit_bucket_boundaries_advisory=sc.DURATION_BUCKETS)

    def start_span(self, name: str, *, kind: SpanKind = SpanKind.INTERNAL,
                   attributes: Attributes | None = None, links: Sequence[Link] | None = None,
                   parent: otel_context.Context | None = None) -> Span:
        """Start (but do not activate) a span; exceptions are recorded by ``end_span``."""
        return self.tracer.start_span(name, context=parent, kind=kind, attributes=attributes,
                                      links=links, record_exception=False,
                                      set_status_on_exception=False)

    @staticmethod
    def end_span(span: Span, error: BaseException | None = None) -> None:
        """End ``span``, marking it failed when ``error`` is given."""
        if error is not None:
            record_error(span, error)
        span.end()

    @contextmanager
    def span(self, name: str, *, kind: SpanKind = SpanKind.INTERNAL,
             attributes: Attributes | None = None) -> Iterator[Span]:
        """A span that is current inside the ``with`` block and records the block's failure."""
        span = self.start_span(name, kind=kind, attributes=attributes)
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            yield span
        except BaseException as exc:
            record_error(span, exc)
            raise
        finally:
            otel_context.detach(token)
            span.end()

    def content_transfer(self, operation: str, *, destination: str,
                         handle_id: str | None = None, mime_type: str | None = None,
                         byte_size: int | None = None) -> AbstractContextManager[Span]:
        """A current span for a rehost or upload of content (``operation`` names it).

        Set ``plait.content.bytes`` on the yielded span once the byte count is known.
        """
        attributes: dict[str, AttributeValue] = {
            sc.CONTENT_OPERATION: operation, sc.PROVIDER_NAME: sc.provider_name(destination)}
        if handle_id is not None:
            attributes[sc.CONTENT_HANDLE_ID] = handle_id
        if mime_type is not None:
            attributes[sc.CONTENT_MIME_TYPE] = mime_type
        if byte_size is not None:
            attributes[sc.CONTENT_BYTES] = byte_size
        return self.span(f"{operation} {destination}", attributes=attributes)

    def record_tokens(self, usage: Usage, attributes: Attributes) -> None:
        """Record a call's token usage in the metric form the chosen conventions define."""
        if not self.latest:
            self.token_usage.record(usage.input_tokens, {**attributes, sc.TOKEN_TYPE: "input"})
            self.token_usage.record(usage.output_tokens, {**attributes, sc.TOKEN_TYPE: "output"})
            return
        # Data points partition the totals, so sums over any dimension stay additive.
        for kind, count in (("input", usage.input_tokens), ("output", usage.output_tokens)):
            self.inference_tokens.add(count, {**attributes, sc.TOKEN_TYPE: kind,
                                              sc.TOKEN_MODALITY: "unknown"})
        cached = usage.cache_read_tokens + usage.cache_write_tokens
        for cache, count in (("uncached", max(usage.input_tokens - cached, 0)),
                             ("read", usage.cache_read_tokens),
                             ("write", usage.cache_write_tokens)):
            if count:
                self.input_tokens_by_cache.add(count, {**attributes, sc.TOKEN_CACHE: cache})
        for phase, count in (("response", max(usage.output_tokens - usage.reasoning_tokens, 0)),
                             ("reasoning", usage.reasoning_tokens)):
            if count:
                self.output_tokens_by_phase.add(count, {**attributes, sc.TOKEN_PHASE: phase})


_default: Telemetry | None = None


def default() -> Telemetry:
    """A ``Telemetry`` over the global providers (created on first use, never a provider itself)."""
    global _default
    if _default is None:
        _default = Telemetry()
    return _default


def monotonic() -> float:
    """The clock durations are measured with."""
    return time.perf_counter()
