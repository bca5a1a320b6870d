"""The README's table of where tool-returned media go must match the capability tables."""

from __future__ import annotations

import re
from pathlib import Path

from plait import ContentKind
from plait.providers import capabilities_for

README = Path(__file__).resolve().parents[2] / "README.md"
WORDS = {"in the tool result": "tool_result", "follow-up user message": "user",
         "text note": "unsupported"}
# One typical MIME type per column: PNG, PDF, WAV, MP4.
KINDS = [(ContentKind.IMAGE, "image/png"), (ContentKind.DOCUMENT, "application/pdf"),
         (ContentKind.AUDIO, "audio/wav"), (ContentKind.VIDEO, "video/mp4")]


def test_readme_media_table_matches_capabilities() -> None:
    rows = [line for line in README.read_text().splitlines()
            if re.match(r"^\| .+ \| `[a-z-]+:.+` \|", line)]
    assert len(rows) >= 16
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        provider, model = cells[1].strip("`").split(":", 1)
        caps = capabilities_for(provider, model)
        for (kind, mime), cell in zip(KINDS, cells[2:], strict=True):
            assert WORDS[cell.rstrip("¹²")] == caps.placement(kind, mime), (row, kind)
