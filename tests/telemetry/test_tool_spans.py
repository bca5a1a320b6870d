"""``execute_tool`` spans from ``invoke_tool`` inside a traced workflow step."""

from __future__ import annotations

import json

import anyio
from opentelemetry.trace import StatusCode

from plait import (
    Context,
    Image,
    StartEvent,
    StopEvent,
    ToolCall,
    Workflow,
    invoke_tool,
    step,
    tool,
)
from plait.telemetry import OTelHooks, Telemetry
from plait.testing import SpanCapture

CAP = SpanCapture()
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


@tool
async def lookup(query: str) -> str:
    """Look something up, in a task of its own."""
    found: list[str] = []

    async def worker() -> None:
        with CAP.tracer_provider.get_tracer("tool").start_as_current_span("lookup backend"):
            await anyio.sleep(0)
            found.append(query.upper())

    async with anyio.create_task_group() as tg:
        tg.start_soon(worker)
    return found[0]


@tool
async def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


@tool
async def snapshot(name: str) -> Image:
    """Return an image."""
    return Image.from_bytes(PNG, "image/png")


class Go(StartEvent):
    pass


class Tools(Workflow):
    @step
    async def use_tools(self, ev: Go, ctx: Context) -> StopEvent:
        results = [
            await invoke_tool(lookup, ToolCall("c1", "lookup", '{"query": "otel"}'), ctx),
            await invoke_tool(divide, ToolCall("c2", "divide", '{"a": 1, "b": 0}'), ctx),
            await invoke_tool(divide, ToolCall("c3", "divide", '{"a": "x"}'), ctx),
            await invoke_tool(snapshot, ToolCall("c4", "snapshot", '{"name": "s"}'), ctx),
        ]
        return StopEvent(result=[r.ok for r in results])


async def test_tool_spans_nest_under_the_step_and_hold_the_tools_own_spans() -> None:
    CAP.clear()
    tel = Telemetry(tracer_provider=CAP.tracer_provider, capture_content=True)
    assert await Tools(hooks=OTelHooks(tel)).run(Go()) == [True, False, False, True]
    step_span = CAP.span("step use_tools")
    spans = {s.attributes.get("gen_ai.tool.call.id"): s for s in CAP.spans()
             if s.name.startswith("execute_tool ")}
    assert set(spans) == {"c1", "c2", "c3", "c4"}
    for span in spans.values():
        assert span.parent.span_id == step_span.context.span_id
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.type"] == "function"
    ok = spans["c1"]
    assert ok.name == "execute_tool lookup"
    assert ok.attributes["gen_ai.tool.description"] == "Look something up, in a task of its own."
    assert ok.status.status_code is StatusCode.UNSET
    assert CAP.span("lookup backend").parent.span_id == ok.context.span_id
    assert ok.attributes["gen_ai.tool.call.arguments"] == '{"query":"otel"}'
    assert json.loads(ok.attributes["gen_ai.tool.call.result"]) == "OTEL"
    assert spans["c2"].attributes["error.type"] == "ZeroDivisionError"
    assert spans["c2"].status.status_code is StatusCode.ERROR
    assert spans["c3"].attributes["error.type"] == "plait.InvalidToolArguments"
    image = json.loads(spans["c4"].attributes["gen_ai.tool.call.result"])
    assert image[0]["type"] in ("file", "blob") and image[0]["mime_type"] == "image/png"
    assert "iVBOR" not in spans["c4"].attributes["gen_ai.tool.call.result"]
