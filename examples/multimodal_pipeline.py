"""The ``plait demo`` pipeline as a script: Gemini watches a video (Files API), Claude gets key
frames from a tool as images, OpenAI Responses writes the answer.

    python examples/multimodal_pipeline.py                   # local emulators, no keys
    python examples/multimodal_pipeline.py --video talk.mp4  # real APIs when
                                                             # GEMINI_API_KEY, ANTHROPIC_API_KEY
                                                             # and OPENAI_API_KEY are set

The pipeline itself (``VideoPipeline``: three ``Agent``s run as child workflows of one run, the
``key_frames`` tool, the emulator wiring) is in ``plait/_agent_demo.py`` so that the installed
``plait demo`` command can run it from any directory.
"""

from __future__ import annotations

import argparse

import anyio

from plait._agent_demo import run_pipeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--video", help="a video to watch (needed with real API keys)")
    args = parser.parse_args()

    async def go() -> None:
        await run_pipeline(print, video_path=args.video)

    anyio.run(go)


if __name__ == "__main__":
    main()
