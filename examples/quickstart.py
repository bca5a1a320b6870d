"""The README's workflow example: fan out, score in parallel, fan in; run it and stream it."""

import anyio

from plait import Context, Event, Retry, StartEvent, StopEvent, Workflow, step


class Question(StartEvent):
    text: str


class Word(Event):
    word: str


class Scored(Event):
    word: str
    score: int


class Rank(Workflow[Question, list[str]]):
    @step
    async def split(self, ev: Question, ctx: Context) -> list[Word]:
        return [Word(word=w) for w in ev.text.split()]  # a list fans out

    @step(workers=4, timeout=5.0, retry=Retry(attempts=3, backoff=0.2))
    async def score(self, ev: Word, ctx: Context) -> Scored:
        ctx.write_to_stream(Word(word=ev.word))  # shows up in run.events()
        return Scored(word=ev.word, score=len(ev.word))

    @step
    async def rank(self, evs: list[Scored], ctx: Context) -> StopEvent:
        # list[Scored] is a fan-in: every Scored from this fan-out, once all have finished
        best = sorted(evs, key=lambda e: (-e.score, e.word))
        return StopEvent(result=[e.word for e in best])


async def main() -> None:
    print(await Rank().run(text="plait runs typed steps"))
    async with Rank().start(Question(text="stream this too")) as run:
        async for ev in run.events():
            print("  event:", ev)
        print(await run.result())


if __name__ == "__main__":
    anyio.run(main)
