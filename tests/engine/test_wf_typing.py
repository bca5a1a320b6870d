"""Static types flow end to end: ``Workflow[In, Out].run`` returns ``Out``, ``ctx.state`` is typed.

Runs mypy over a small user module against the package (the same symlinked import tree
``scripts/typecheck`` builds, because mypy cannot follow setuptools' editable-install hook).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

USER_CODE = '''
import msgspec
from plait import Context, Event, Retry, StartEvent, StopEvent, Workflow, step

class Go(StartEvent):
    n: int

class Mid(Event):
    v: int

class Answer(StopEvent):
    text: str

class Counter(msgspec.Struct):
    hits: int = 0

class Typed(Workflow[Go, Answer]):
    state_type = Counter

    @step
    async def a(self, ev: Go, ctx: Context[Counter]) -> Mid:
        reveal_type(ctx.state.hits)
        approval = await ctx.wait_for(Mid, timeout=1.0)
        reveal_type(approval)
        return Mid(v=ev.n + approval.v)

    @step(workers=2, retry=Retry(attempts=2))
    async def b(self, ev: Mid, ctx: Context) -> Answer:
        return Answer(text=str(ev.v))

class Untyped(Workflow):
    @step
    async def only(self, ev: Go, ctx: Context) -> StopEvent:
        return StopEvent(result=ev.n)

async def main() -> None:
    reveal_type(await Typed().run(Go(n=1)))
    async with Typed().start(n=1) as run:
        reveal_type(run)
        reveal_type(await run.result())
    reveal_type(await Untyped().run(n=1))
    await Typed().run(Mid(v=1))  # wrong start event type: an error
'''


def test_types_flow_through_run_state_and_wait_for(tmp_path: pathlib.Path) -> None:
    tree = tmp_path / "tree"
    (tree / "plait").mkdir(parents=True)
    for f in (ROOT / "engine").iterdir():
        (tree / "plait" / f.name).symlink_to(f)
    (tree / "plait" / "providers").symlink_to(ROOT / "providers")
    (tree / "plait" / "stores").symlink_to(ROOT / "stores")
    (tree / "user_code.py").write_text(USER_CODE)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent",
         "user_code.py"],
        cwd=tree, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "MYPYPATH": str(tree)},
    )
    out = proc.stdout
    revealed = [line.split("Revealed type is ", 1)[1] for line in out.splitlines()
                if "Revealed type is" in line]
    assert revealed == [
        '"int"',
        '"user_code.Mid"',
        '"user_code.Answer"',
        '"plait._run.Run[user_code.Answer]"',
        '"user_code.Answer"',
        '"Any"',
    ], out
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "Mid" in errors[0] and '"run"' in errors[0], out
