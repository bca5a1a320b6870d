"""A real OTLP/HTTP export of a traced run to a receiver on 127.0.0.1.

The receiver is a stdlib HTTP server decoding the protobuf bodies with ``opentelemetry-proto``:
what arrives is what a collector would get.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from plait import Message, ModelReply, ModelRequest, Text, ToolCall, ToolResult, Usage
from plait.telemetry import ChatCall, OTelHooks, tool_span


class _Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.traces: list[trace_service_pb2.ExportTraceServiceRequest] = []
        self.metrics: list[metrics_service_pb2.ExportMetricsServiceRequest] = []
        self.content_types: list[str] = []


class _Handler(BaseHTTPRequestHandler):
    server: _Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.server.content_types.append(self.headers["Content-Type"])
        response: Any
        if self.path == "/v1/traces":
            request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
            self.server.traces.append(request)
            response = trace_service_pb2.ExportTraceServiceResponse()
        elif self.path == "/v1/metrics":
            self.server.metrics.append(
                metrics_service_pb2.ExportMetricsServiceRequest.FromString(body))
            response = metrics_service_pb2.ExportMetricsServiceResponse()
        else:
            self.send_error(404)
            return
        payload = response.SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    server = _Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _value(any_value: Any) -> Any:
    field = any_value.WhichOneof("value")
    value = getattr(any_value, field)
    if field == "array_value":
        return [_value(v) for v in value.values]
    return value


def test_spans_and_metrics_arrive_over_otlp_http(receiver: _Receiver) -> None:
    base = f"http://127.0.0.1:{receiver.server_address[1]}"
    resource = Resource.create({"service.name": "plait-test"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces", timeout=5)))
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=f"{base}/v1/metrics", timeout=5),
        export_interval_millis=3_600_000)
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    hooks = OTelHooks(tracer_provider=tracer_provider, meter_provider=meter_provider)

    run = hooks.run_started("Exported", "run-otlp")
    step = hooks.step_started(run, "agent", 1, [])
    call = ChatCall(hooks.telemetry, ModelRequest("gpt-test", [Message.user("hi")]),
                    provider="openai", server_address="127.0.0.1", server_port=9)
    call.finish(ModelReply([ToolCall("c1", "lookup")], Usage(12, 3), "tool_calls", "r1",
                           "gpt-test-2"))
    with tool_span(hooks.telemetry, ToolCall("c1", "lookup")) as record:
        record(ToolResult("c1", "lookup", [Text("ok")]))
    hooks.step_finished(step, None)
    hooks.run_finished(run, None)
    assert tracer_provider.force_flush(10_000)
    assert meter_provider.force_flush(10_000)
    tracer_provider.shutdown()
    meter_provider.shutdown()

    assert receiver.content_types and set(receiver.content_types) == {"application/x-protobuf"}
    spans = {}
    for request in receiver.traces:
        for resource_spans in request.resource_spans:
            service = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            assert service["service.name"] == "plait-test"
            for scope_spans in resource_spans.scope_spans:
                assert scope_spans.scope.name == "plait"
                for span in scope_spans.spans:
                    spans[span.name] = span
    assert set(spans) == {"invoke_workflow Exported", "step agent", "chat gpt-test",
                          "execute_tool lookup"}
    chat = spans["chat gpt-test"]
    attrs = {a.key: _value(a.value) for a in chat.attributes}
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.response.finish_reasons"] == ["tool_call"]
    assert attrs["gen_ai.usage.input_tokens"] == 12
    assert chat.kind == chat.SPAN_KIND_CLIENT
    assert chat.parent_span_id == spans["step agent"].span_id
    assert spans["step agent"].parent_span_id == spans["invoke_workflow Exported"].span_id
    tool_attrs = {a.key: _value(a.value) for a in spans["execute_tool lookup"].attributes}
    assert tool_attrs["gen_ai.tool.call.id"] == "c1"

    names = {m.name: m for request in receiver.metrics for rm in request.resource_metrics
             for sm in rm.scope_metrics for m in sm.metrics}
    usage = names["gen_ai.client.token.usage"]
    assert usage.unit == "{token}"
    assert sorted(p.sum for p in usage.histogram.data_points) == [3, 12]
    assert "gen_ai.client.operation.duration" in names and "plait.step.duration" in names
