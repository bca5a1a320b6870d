"""Capturing spans and metrics in memory, for tests and for ``plait demo --trace``.

Needs ``opentelemetry-sdk`` (plait's ``test`` extra); imported lazily so ``plait.testing`` stays
importable without it. Nothing global is touched: pass ``capture.tracer_provider`` and
``capture.meter_provider`` to the code under test (``OTelHooks(tracer_provider=...)``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["SpanCapture"]


class SpanCapture:
    """A private tracer and meter provider that keep everything in memory.

    Raises ``ImportError`` naming the missing package when the SDK is not installed.
    """

    def __init__(self) -> None:
        try:
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import InMemoryMetricReader
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
                InMemorySpanExporter,
            )
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("SpanCapture needs the OpenTelemetry SDK: pip install "
                              "'plait[otel]'") from exc
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.metric_reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.metric_reader])

    def spans(self) -> list[Any]:
        """Finished spans, in the order they ended."""
        return list(self.exporter.get_finished_spans())

    def span(self, name: str) -> Any:
        """The one finished span called ``name``; raises ``LookupError`` if not exactly one."""
        found = [s for s in self.spans() if s.name == name]
        if len(found) != 1:
            raise LookupError(f"expected one span named {name!r}, found {len(found)}: "
                              f"{sorted(s.name for s in self.spans())}")
        return found[0]

    def metric_points(self, name: str) -> list[Any]:
        """The data points recorded so far for the metric called ``name`` (any instrument)."""
        data = self.metric_reader.get_metrics_data()
        points: list[Any] = []
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        points.extend(metric.data.data_points)
        return points

    def tree(self) -> str:
        """The finished spans as an indented tree with durations."""
        from ..telemetry import format_span_tree

        return format_span_tree(self.spans())

    def clear(self) -> None:
        """Forget the spans captured so far."""
        self.exporter.clear()
