"""The handle directory note: the system text that tells a model which content it can name.

Before each model call the agent adds this note so the model knows the ids in scope and can pass
them to content parameters. Display names come from users and tools, so they are quoted,
stripped of control characters and shortened: a file name must not be able to inject lines
into the system prompt.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from ._content import ContentHandle

__all__ = ["describe_handle", "handle_directory_note"]

_MAX_NAME = 80
_MAX_LISTED = 200


def _size(byte_size: int | None) -> str | None:
    if byte_size is None:
        return None
    size = float(byte_size)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return None  # pragma: no cover - the loop always returns


def _safe_name(name: str) -> str:
    cleaned = "".join(ch if ch.isprintable() else " " for ch in name).strip()
    if len(cleaned) > _MAX_NAME:
        cleaned = cleaned[: _MAX_NAME - 3] + "..."
    return msgspec.json.encode(cleaned).decode()


def describe_handle(handle: ContentHandle) -> str:
    """One line for a handle: ``id (kind, MIME type, size, "name")``, skipping unknowns."""
    details = [handle.kind.value]
    if handle.mime_type:
        details.append(handle.mime_type)
    size = _size(handle.byte_size)
    if size:
        details.append(size)
    if handle.display_name:
        details.append(_safe_name(handle.display_name))
    return f"{handle.id} ({', '.join(details)})"


def handle_directory_note(handles: Iterable[ContentHandle]) -> str:
    """The system note listing the handles in scope; ``""`` when there are none."""
    listed = list(handles)
    if not listed:
        return ""
    lines = [
        ("Content available in this conversation. To give one of these to a tool, pass its id "
        "as the value of a parameter that takes content:")
    ]
    lines.extend(f"- {describe_handle(handle)}" for handle in listed[-_MAX_LISTED:])
    if len(listed) > _MAX_LISTED:
        lines.append(f"({len(listed) - _MAX_LISTED} older items not listed)")
    return "\n".join(lines)
