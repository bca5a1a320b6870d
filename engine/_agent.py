"""``Agent``: the friendly front of ``AgentWorkflow``.

    agent = Agent(model="anthropic:claude-sonnet-4-5", tools=[describe], store=MemoryStore())
    result = await agent.run("What is in this picture?")
    async with agent.start(["Compare these", Image.from_path("a.png")]) as run:
        async for ev in run.events(): ...
        result = await run.result()

The same agent can change ``agent.model`` between runs (or take ``model=`` per run) and carry a
conversation on with ``history=result.messages``: content handles stay valid across providers
because the rehost step moves bytes to wherever the next provider can read them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Self

from ._agent_events import AgentInput, AgentResult
from ._agent_workflow import AgentWorkflow, Prices
from ._content import ContentHandle
from ._messages import GenerationOptions, Message
from ._parts import ContentPart, MediaPart, Text
from ._rehost import FileStore, Rehoster
from ._run import RunStarter
from ._store import ContentStore
from ._tools import Tool
from .telemetry._hooks import OTelHooks

__all__ = ["Agent", "Prompt"]

Prompt = str | ContentPart | ContentHandle | Sequence["str | ContentPart | ContentHandle"]
"""What ``Agent.run`` takes: text, a part, a handle, or a list of them."""


class Agent:
    """An LLM with tools and a content store, running ``AgentWorkflow`` (or a subclass).

    ``file_stores`` maps a provider's file-store name (``"openai"``, ``"anthropic"``,
    ``"gemini"``, ``"fal"``) to its store: where content is uploaded when it is too big to
    inline or lives at another provider. ``connect`` turns ``"provider:model"`` into a provider
    (default ``plait.providers.connect``; pass one to set base URLs or keys). ``prices`` (US
    dollars per million input/output tokens by model) makes ``AgentResult.cost`` known.
    ``upload_over`` (bytes) sends bigger media through the file store even when inlining is
    allowed (a video resent every turn is cheaper as a file id).
    """

    def __init__(self, model: str, *, tools: Iterable[Tool] = (),
                 store: ContentStore | None = None, system: str | None = None,
                 max_turns: int = 10, file_stores: Mapping[str, FileStore] | None = None,
                 connect: Callable[[str], Any] | None = None,
                 tool_timeout: float | None = 60.0, max_parallel_tools: int = 8,
                 options: GenerationOptions | None = None, prices: Prices | None = None,
                 stream: bool = True, upload_over: int | None = None,
                 workflow: type[AgentWorkflow] = AgentWorkflow,
                 **workflow_options: Any) -> None:
        self.store = store
        # Only the default connect knows the provider names: check the model string now, not
        # when the first request fails inside a step.
        self._check_model = _check_model if connect is None else _accept_any
        self._check_model(model)
        # Traced by default: with no OpenTelemetry SDK the hooks cost a microsecond or two a
        # step; with one (global or passed as hooks=OTelHooks(tracer_provider=...)), every
        # run is an invoke_agent span with its steps, model calls and tool calls.
        workflow_options.setdefault("hooks", OTelHooks())
        rehoster = Rehoster([store] if store is not None else [], dict(file_stores or {}),
                            upload_over=upload_over)
        self.workflow = workflow(
            model=model, tools=tools, system=system, max_turns=max_turns,
            tool_timeout=tool_timeout, max_parallel_tools=max_parallel_tools, options=options,
            connect=connect, rehoster=rehoster, prices=prices, stream=stream,
            store=store, **workflow_options)

    @property
    def model(self) -> str:
        """The ``provider:model`` the next run starts with; assign to switch provider."""
        return self.workflow.model

    @model.setter
    def model(self, value: str) -> None:
        self._check_model(value)
        self.workflow.model = value

    def _input(self, prompt: Prompt, history: Sequence[Message],
               model: str | None) -> AgentInput:
        if model is not None:
            self._check_model(model)
        return AgentInput(prompt=_parts(prompt), history=list(history), model=model)

    async def run(self, prompt: Prompt, *, history: Sequence[Message] = (),
                  model: str | None = None, **run_options: Any) -> AgentResult:
        """Run the agent to its answer.

        :raises StepFailed: a step failed (the provider's error, e.g. ``ContentRejected`` or
            ``RateLimited`` after retries, is its ``__cause__``).
        """
        result: AgentResult = await self.workflow.run(self._input(prompt, history, model),
                                                      **run_options)
        return result

    def start(self, prompt: Prompt, *, history: Sequence[Message] = (),
              model: str | None = None, **run_options: Any) -> RunStarter[AgentResult]:
        """Start a run to stream: ``async with agent.start(...) as run: async for ev in ...``."""
        return self.workflow.start(self._input(prompt, history, model), **run_options)

    async def aclose(self) -> None:
        """Close the provider connections the agent opened."""
        await self.workflow.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _parts(prompt: Prompt) -> list[str | ContentPart]:
    items: Sequence[Any] = [prompt] if isinstance(prompt, str | MediaPart | Text
                                                   | ContentHandle) else prompt
    out: list[str | ContentPart] = []
    for item in items:
        if isinstance(item, str):
            out.append(Text(item))
        elif isinstance(item, ContentHandle):
            out.append(_part_for(item))
        else:
            out.append(item)
    return out


def _part_for(handle: ContentHandle) -> ContentPart:
    from ._parts import Audio, Document, Image, Video

    kinds: dict[str, type[MediaPart]] = {"image": Image, "audio": Audio, "video": Video}
    cls = kinds.get(handle.kind.value, Document)
    part: ContentPart = cls.from_handle(handle)  # type: ignore[assignment]
    return part


def _check_model(model: str) -> None:
    """Raise ``ConfigurationError`` / ``UnknownProvider`` for a model ``connect`` cannot open."""
    from plait.providers._client import parse_model  # the engine imports providers lazily

    parse_model(model)


def _accept_any(model: str) -> None:
    """A custom ``connect`` decides for itself which model strings it takes."""
