"""``AgentWorkflow``: the agent turn as an ordinary workflow of six replaceable steps.

prepare → rehost → serialize → call_model → resolve → dispatch_tools → prepare … until the
model answers without tool calls (``StopEvent`` carrying an ``AgentResult``) or ``max_turns``
model calls were made. Subclass it to add a step (an approval before ``dispatch_tools``, see
``examples/agent_approval.py``) or replace one; the events between the steps are public.

Configuration that is not run state (tools, the provider connections, file stores, the rehost
cache) lives on the workflow instance; the conversation, the model in use, usage and cost live
in the run's state (``AgentState``), so a checkpointed run resumes with all of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

import anyio
import msgspec

from ._agent_events import (
    AgentInput,
    AgentResult,
    AgentTextDelta,
    MediaRouted,
    ModelResponded,
    Prepared,
    Rehosted,
    Serialized,
    ToolCallFinished,
    ToolCallsResolved,
    ToolCallStarted,
    ToolsDispatched,
    TransferProgressed,
    TurnFinished,
    TurnStarted,
)
from ._context import Context
from ._directory import handle_directory_note
from ._errors import ContentError, ToolError
from ._events import StopEvent
from ._invoke import _argument_error_text, invoke_tool
from ._messages import (
    GenerationOptions,
    Message,
    MessagePart,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from ._parts import MediaPart, Text
from ._progress import TransferProgress
from ._rehost import MediaMove, Rehoster
from ._resolver import resolve_arguments
from ._step import step
from ._tool_output import _store_part
from ._tools import Tool
from ._workflow import Workflow
from .telemetry._hooks import register_agent_workflow

__all__ = ["AgentState", "AgentWorkflow", "Prices"]

Prices = Mapping[str, tuple[float, float]]
"""US dollars per million input and output tokens, by ``provider:model``."""


class AgentState(msgspec.Struct, kw_only=True):
    """The run's state: the conversation so far, the model in use, turns, usage and cost."""

    messages: list[Message] = msgspec.field(default_factory=list)
    model: str = ""
    turn: int = 0
    usage: Usage = msgspec.field(default_factory=Usage)
    cost: float | None = 0.0
    finish_reason: str | None = None


class AgentWorkflow(Workflow[AgentInput, AgentResult]):
    """An agent loop whose steps are plain ``@step`` methods (see the module docstring)."""

    state_type: ClassVar[type[Any] | None] = AgentState

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        register_agent_workflow(cls.__qualname__)  # traced as invoke_agent, not invoke_workflow

    def __init__(self, *, model: str, tools: Iterable[Tool] = (), system: str | None = None,
                 max_turns: int = 10, tool_timeout: float | None = 60.0,
                 max_parallel_tools: int = 8, options: GenerationOptions | None = None,
                 connect: Callable[[str], Any] | None = None,
                 rehoster: Rehoster | None = None, prices: Prices | None = None,
                 stream: bool = True, **workflow_options: Any) -> None:
        super().__init__(**workflow_options)
        self.model = model
        self.tools: dict[str, Tool] = {t.name: t for t in tools}
        self.system = system
        self.max_turns = max_turns
        self.tool_timeout = tool_timeout
        self.max_parallel_tools = max_parallel_tools
        self.options = options or GenerationOptions()
        self.rehoster = rehoster or Rehoster()
        self.prices = dict(prices or {})
        self.stream = stream
        self._connect = connect
        self._providers: dict[str, Any] = {}

    # --- providers --------------------------------------------------------------------------

    def provider(self, model: str) -> Any:
        """The connected provider for ``provider:model`` (one per model string, reused).

        :raises ValueError: malformed model string. :raises LookupError: unknown provider.
        """
        found = self._providers.get(model)
        if found is None:
            if self._connect is not None:
                found = self._connect(model)
            else:
                from plait.providers import connect

                found = connect(model)
            if getattr(found, "uploader", False) is None:
                # Requests too big as a whole upload their largest items instead of failing.
                caps = found.capabilities_for(found.model)
                found.uploader = self.rehoster.uploader_for(caps)
            self._providers[model] = found
        return found

    async def aclose(self) -> None:
        """Close every provider connection this workflow opened."""
        providers, self._providers = list(self._providers.values()), {}
        for provider in providers:
            await provider.aclose()

    def _cost(self, model: str, usage: Usage) -> float | None:
        price = self.prices.get(model)
        if price is None:
            return None
        return (usage.input_tokens * price[0] + usage.output_tokens * price[1]) / 1e6

    def _result(self, state: AgentState, output: str) -> AgentResult:
        return AgentResult(output=output, messages=list(state.messages), usage=state.usage,
                           turns=state.turn, model=state.model, cost=state.cost,
                           finish_reason=state.finish_reason)

    # --- steps --------------------------------------------------------------------------------

    @step
    async def prepare(self, ev: AgentInput | ToolsDispatched,
                      ctx: Context[AgentState]) -> Prepared | StopEvent:
        """Extend the conversation; store new media as handles; add the handle directory note."""
        state = ctx.state
        if isinstance(ev, AgentInput):
            state.model = ev.model or state.model or self.model
            for message in ev.history:
                _expose(message.parts, ctx)
            prompt = [await _store_part(Text(part) if isinstance(part, str) else part, ctx)
                      for part in ev.prompt]
            state.messages = [*ev.history, Message("user", list(prompt))]
        else:
            state.messages.append(Message("tool", list(ev.results)))
            if state.turn >= self.max_turns:
                state.finish_reason = "max_turns"
                last = next((m.text for m in reversed(state.messages) if m.role == "assistant"),
                            "")
                return StopEvent(result=self._result(state, last))
        note = handle_directory_note(ctx.handles)
        system = "\n\n".join(s for s in (self.system, note) if s) or None
        return Prepared(turn=state.turn + 1, model=state.model, messages=state.messages,
                        system=system)

    @step
    async def rehost(self, ev: Prepared, ctx: Context[AgentState]) -> Rehosted:
        """Make every media part reachable by this turn's provider (see ``plait._rehost``)."""
        ctx.write_to_stream(TurnStarted(turn=ev.turn, model=ev.model))
        provider = self.provider(ev.model)
        facts = provider.capabilities_for(provider.model)

        def moved(move: MediaMove) -> None:
            ctx.write_to_stream(MediaRouted(turn=ev.turn, move=move))

        def progressed(progress: TransferProgress) -> None:
            ctx.write_to_stream(TransferProgressed(progress=progress))

        if ctx.store is not None and ctx.store not in self.rehoster.stores:
            self.rehoster.stores = [ctx.store, *self.rehoster.stores]
        messages = await self.rehoster.rehost(ev.messages, facts, on_move=moved,
                                              on_progress=progressed)
        return Rehosted(turn=ev.turn, model=ev.model, messages=messages, system=ev.system)

    @step
    async def serialize(self, ev: Rehosted, ctx: Context[AgentState]) -> Serialized:
        """Build the provider request: conversation, system text, tools and options."""
        provider = self.provider(ev.model)
        request = ModelRequest(model=provider.model, messages=ev.messages,
                               tools=[t.spec for t in self.tools.values()], system=ev.system,
                               options=self.options, stream=self.stream)
        return Serialized(turn=ev.turn, model=ev.model, request=request)

    @step
    async def call_model(self, ev: Serialized, ctx: Context[AgentState]) -> ModelResponded:
        """Call the model, streaming text deltas to the caller; count usage and cost."""
        from plait.providers import Accumulator

        provider = self.provider(ev.model)
        if ev.request.stream:
            acc = Accumulator(provider.name)
            async for delta in provider.stream(ev.request):
                acc.add(delta)
                if isinstance(delta, TextDelta) and delta.text:
                    ctx.write_to_stream(AgentTextDelta(turn=ev.turn, text=delta.text))
            reply = acc.reply()
        else:
            reply = await provider.complete(ev.request)
            if reply.text:
                ctx.write_to_stream(AgentTextDelta(turn=ev.turn, text=reply.text))
        state = ctx.state
        state.turn = ev.turn
        state.usage = state.usage + reply.usage
        cost = self._cost(ev.model, reply.usage)
        state.cost = None if cost is None or state.cost is None else state.cost + cost
        state.finish_reason = reply.finish_reason
        ctx.write_to_stream(TurnFinished(turn=ev.turn, model=ev.model, usage=reply.usage,
                                         finish_reason=reply.finish_reason))
        return ModelResponded(turn=ev.turn, model=ev.model, reply=reply)

    @step
    async def resolve(self, ev: ModelResponded,
                      ctx: Context[AgentState]) -> ToolCallsResolved | StopEvent:
        """Record the reply; check each tool call's tool and arguments (errors go to the model)."""
        state = ctx.state
        state.messages.append(ev.reply.as_message())
        calls = ev.reply.tool_calls
        if not calls:
            return StopEvent(result=self._result(state, ev.reply.text))
        runnable: list[str] = []
        rejected: list[ToolResult] = []
        for call in calls:
            tool = self.tools.get(call.name)
            if tool is None:
                names = ", ".join(sorted(self.tools)) or "none"
                rejected.append(_error(call, f"Unknown tool {call.name!r}. Tools: {names}."))
                continue
            try:
                # A check only: dispatch resolves again, so events carry no live objects
                # (they are checkpointed) and a subclass may rewrite the calls in between.
                await resolve_arguments(tool, call.arguments, ctx)
            except (ToolError, ContentError) as exc:
                rejected.append(_error(call, _argument_error_text(tool, exc, ctx)))
                continue
            runnable.append(call.id)
        return ToolCallsResolved(turn=ev.turn, calls=list(calls), runnable=runnable,
                                 rejected=rejected)

    @step
    async def dispatch_tools(self, ev: ToolCallsResolved,
                             ctx: Context[AgentState]) -> ToolsDispatched:
        """Run the turn's tool calls concurrently (bounded), each within its timeout."""
        return await self.run_tools(ev, ctx)

    async def run_tools(self, ev: ToolCallsResolved, ctx: Context[Any]) -> ToolsDispatched:
        """What ``dispatch_tools`` does, callable from a subclass's replacement step."""
        results: dict[str, ToolResult] = {r.call_id: r for r in ev.rejected}
        runnable = set(ev.runnable)
        todo = [c for c in ev.calls if c.id in runnable and c.id not in results]
        limiter = anyio.CapacityLimiter(self.max_parallel_tools)

        async def one(call: ToolCall) -> None:
            async with limiter:
                tool = self.tools[call.name]
                ctx.write_to_stream(ToolCallStarted(turn=ev.turn, call=call))
                started = time.perf_counter()
                timeout = tool.timeout if tool.timeout is not None else self.tool_timeout
                outcome = await invoke_tool(tool, call, ctx, timeout=timeout)
                results[call.id] = outcome.result
                error = None if outcome.error is None else \
                    f"{type(outcome.error).__name__}: {outcome.error}"
                ctx.write_to_stream(ToolCallFinished(
                    turn=ev.turn, result=outcome.result, error=error,
                    seconds=time.perf_counter() - started))

        if len(todo) == 1:
            await one(todo[0])
        elif todo:
            async with anyio.create_task_group() as tg:
                for call in todo:
                    tg.start_soon(one, call)
        missing = [c for c in ev.calls if c.id not in results]
        for call in missing:  # a subclass dropped it: the model must still get an answer
            results[call.id] = _error(call, "The call was not run.")
        return ToolsDispatched(turn=ev.turn, results=[results[c.id] for c in ev.calls])


register_agent_workflow(AgentWorkflow.__qualname__)


def _error(call: ToolCall, text: str) -> ToolResult:
    return ToolResult(call_id=call.id, name=call.name, output=[Text(text)], is_error=True)


def _expose(parts: Sequence[MessagePart], ctx: Context[Any]) -> None:
    """Make the handles a conversation carries visible to this run (history from elsewhere)."""
    for part in parts:
        if isinstance(part, MediaPart) and part.handle is not None:
            ctx.handles.add(part.handle)
        elif isinstance(part, ToolResult):
            _expose(part.output, ctx)
