"""The README's tracing example: trace a run, print its span tree, log with run ids."""

import anyio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import plait.logging
from plait import Event, StartEvent, StopEvent, Workflow, step
from plait.telemetry import OTelHooks, format_span_tree


class Question(StartEvent):
    text: str


class Draft(Event):
    text: str


class Pipeline(Workflow):
    @step
    async def draft(self, ev: Question) -> list[Draft]:
        plait.logging.get_logger().info("drafting", api_key="sk-" + "x" * 40)  # redacted
        return [Draft(text=ev.text), Draft(text=ev.text.upper())]

    @step
    async def pick(self, evs: list[Draft]) -> StopEvent:  # fan-in: linked to both drafts
        return StopEvent(result=max(e.text for e in evs))


async def main() -> None:
    exporter = InMemorySpanExporter()  # in production: OTLPSpanExporter to your collector
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    plait.logging.configure(json=True)  # lines carry run_id, step, trace_id, span_id
    result = await Pipeline(hooks=OTelHooks(tracer_provider=provider)).run(text="hi")
    print(result)
    print(format_span_tree(exporter.get_finished_spans()))


if __name__ == "__main__":
    anyio.run(main)
