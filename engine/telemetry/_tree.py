"""Rendering finished spans as an indented tree with durations (``plait demo --trace``).

Works on any objects shaped like the SDK's ``ReadableSpan`` (``name``, ``context``, ``parent``,
``start_time``, ``end_time``, ``links``, ``status``), so the library itself needs no SDK.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["format_span_tree"]


def _duration(span: Any) -> str:
    if span.start_time is None or span.end_time is None:
        return "unfinished"
    ms = (span.end_time - span.start_time) / 1e6
    return f"{ms:.3f} ms" if ms < 10 else f"{ms:.1f} ms"


def _label(span: Any) -> str:
    label = f"{span.name}  {_duration(span)}"
    attempt = (span.attributes or {}).get("plait.step.attempt")
    if attempt is not None and attempt != 1:
        label += f"  attempt {attempt}"
    if span.links:
        label += f"  links {len(span.links)}"
    status = getattr(getattr(span, "status", None), "status_code", None)
    if status is not None and status.name == "ERROR":
        label += f"  ERROR {(span.attributes or {}).get('error.type', '')}".rstrip()
    return label


def format_span_tree(spans: Iterable[Any]) -> str:
    """The spans as a tree, children in start order under their parents, one line per span."""
    spans = list(spans)
    ids = {s.context.span_id for s in spans}
    children: dict[int | None, list[Any]] = {}
    for s in spans:
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in ids else None
        children.setdefault(parent, []).append(s)
    for group in children.values():
        group.sort(key=lambda s: s.start_time or 0)
    lines: list[str] = []

    def walk(span: Any, prefix: str, last: bool, root: bool) -> None:
        branch = "└── " if last else "├── "
        lines.append(_label(span) if root else f"{prefix}{branch}{_label(span)}")
        kids = children.get(span.context.span_id, [])
        inner = "" if root else prefix + ("    " if last else "│   ")
        for i, kid in enumerate(kids):
            walk(kid, inner, i == len(kids) - 1, False)

    for root in children.get(None, []):
        walk(root, "", True, True)
    return "\n".join(lines)
