"""A human approves tool calls before they run: ``AgentWorkflow`` plus one step.

The subclass puts an ``approve`` step between ``resolve`` and ``dispatch_tools``: it shows the
caller the calls (an ``InputRequired`` event on the stream) and waits for an ``Approval``
without re-running anything. Refused calls go back to the model as tool errors, so it can
change course; approved ones run as usual.

    python examples/agent_approval.py       # runs against a local emulator, no key needed
"""

from __future__ import annotations

from typing import Any

import anyio

from plait import (
    Agent,
    AgentWorkflow,
    Context,
    Event,
    InputRequired,
    Text,
    ToolCallsResolved,
    ToolResult,
    ToolsDispatched,
    step,
    tool,
)


class Approval(Event):
    """The human's answer: the ids of the calls they allow (the rest are refused)."""

    allowed: list[str]


class ApprovedCalls(ToolCallsResolved):
    """``ToolCallsResolved`` after the human's decision (refused calls moved to ``rejected``)."""


class ApprovingWorkflow(AgentWorkflow):
    """``AgentWorkflow`` with a human approval step before tools run."""

    @step
    async def approve(self, ev: ToolCallsResolved, ctx: Context[Any]) -> ApprovedCalls:
        """Ask for an ``Approval`` naming the calls that may run."""
        pending = [c for c in ev.calls if c.id in ev.runnable]
        answer = await ctx.wait_for(
            Approval, prompt=[{"id": c.id, "tool": c.name, "arguments": c.arguments}
                              for c in pending])
        refused = [ToolResult(c.id, c.name, [Text("The user did not allow this call.")],
                              is_error=True)
                   for c in pending if c.id not in answer.allowed]
        return ApprovedCalls(turn=ev.turn, calls=ev.calls,
                             runnable=[c.id for c in pending if c.id in answer.allowed],
                             rejected=[*ev.rejected, *refused])

    @step
    async def dispatch_tools(self, ev: ApprovedCalls, ctx: Context[Any]) -> ToolsDispatched:
        """Run only what was approved."""
        return await self.run_tools(ev, ctx)


@tool
def delete_file(path: str) -> str:
    """Delete a file (pretend)."""
    return f"deleted {path}"


async def main() -> None:
    from plait.providers import connect
    from plait.testing import AnthropicEmulator, LoopbackServer, ScriptedReply

    emulator = AnthropicEmulator(api_key="sk-demo")
    emulator.script_reply(ScriptedReply("", [("call_1", "delete_file", '{"path": "/tmp/x"}')]))
    emulator.script_reply(ScriptedReply("Understood, I left the file alone."))
    with LoopbackServer(emulator) as server:
        agent = Agent("anthropic:claude-sonnet-4-5", tools=[delete_file],
                      workflow=ApprovingWorkflow,
                      connect=lambda m: connect(m, api_key="sk-demo", base_url=server.url))
        async with agent.start("Clean up /tmp/x") as run:
            async for ev in run.events():
                if isinstance(ev, InputRequired):
                    print("approval requested for:", ev.prompt)
                    await run.send(Approval(allowed=[]))  # the human says no
            result = await run.result()
        await agent.aclose()
    print("answer:", result.output)


if __name__ == "__main__":
    anyio.run(main)
