"""What a model family accepts: media kinds per position, MIME allowlists, limits, sources.

Serializers, placement and preflight all read the same table, so a fact about a provider is
written once. A wire module exposes ``CAPABILITIES``, a ``CapabilityTable`` mapping model-id
glob patterns to ``Capabilities``; ``CapabilityTable.lookup(model)`` picks the first match.

``Capabilities`` answers three questions for a media kind:

- ``placement(kind, mime)``: ``"tool_result"`` (the API carries it inside a tool result; an
  optional ``tool_result_mime_types[kind]`` narrows which MIME types may stay there), ``"user"``
  (only in user messages: tool results move it to a follow-up user message, see
  ``_placement``) or ``"unsupported"`` (it becomes a text note and a warning).
- ``mime_allowed(kind, mime)``: the MIME allowlist for that kind (no entry = anything goes).
- limits: ``max_item_bytes[kind]`` (raw bytes of one item), ``max_items`` and
  ``max_items_per_kind[kind]`` (media items per request), ``max_request_bytes`` (encoded body).

and two about sources: ``url_kinds`` (kinds the provider fetches from a URL itself) and
``file_provider`` / ``file_id_kinds`` (whose file ids it takes, and for which kinds).

Derive variants with ``dataclasses.replace`` (``caps.with_(...)`` is a shorthand).
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias

from plait import ContentKind

__all__ = [
    "AUDIO",
    "DOCUMENT",
    "IMAGE",
    "MEDIA_KINDS",
    "VIDEO",
    "Capabilities",
    "CapabilityTable",
    "Placement",
]

IMAGE = ContentKind.IMAGE
AUDIO = ContentKind.AUDIO
VIDEO = ContentKind.VIDEO
DOCUMENT = ContentKind.DOCUMENT
MEDIA_KINDS: frozenset[ContentKind] = frozenset({IMAGE, AUDIO, VIDEO, DOCUMENT})

Placement: TypeAlias = Literal["tool_result", "user", "unsupported"]
"""Where a media item of a tool result goes for one destination."""

MB = 1024 * 1024


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Capabilities:
    """The facts about one model family of one provider (see the module docstring)."""

    provider: str
    family: str = "*"
    tool_result_kinds: frozenset[ContentKind] = frozenset()
    tool_result_mime_types: Mapping[ContentKind, frozenset[str]] = dataclasses.field(
        default_factory=dict)
    user_kinds: frozenset[ContentKind] = frozenset({IMAGE})
    mime_types: Mapping[ContentKind, frozenset[str]] = dataclasses.field(default_factory=dict)
    max_item_bytes: Mapping[ContentKind, int] = dataclasses.field(default_factory=dict)
    max_items: int | None = None
    max_items_per_kind: Mapping[ContentKind, int] = dataclasses.field(default_factory=dict)
    max_request_bytes: int | None = None
    url_kinds: frozenset[ContentKind] = frozenset()
    file_provider: str | None = None
    file_id_kinds: frozenset[ContentKind] = frozenset()

    def placement(self, kind: ContentKind, mime: str | None = None) -> Placement:
        """Where a tool-returned item of ``kind`` (and MIME type ``mime``) goes.

        An item of a tool-result kind whose MIME type is outside ``tool_result_mime_types`` for
        that kind (when given) goes to the follow-up user message instead.
        """
        if kind in self.tool_result_kinds and _allowed(self.tool_result_mime_types, kind, mime):
            return "tool_result"
        if kind in self.user_kinds:
            return "user"
        return "unsupported"

    def accepts(self, kind: ContentKind) -> bool:
        """Whether the destination takes ``kind`` anywhere at all."""
        return kind in self.user_kinds or kind in self.tool_result_kinds

    def mime_allowed(self, kind: ContentKind, mime: str | None) -> bool:
        """Whether ``mime`` passes the allowlist for ``kind`` (no allowlist: always)."""
        return _allowed(self.mime_types, kind, mime)

    def takes_file_id(self, kind: ContentKind, provider: str) -> bool:
        """Whether a file id of ``provider``'s file store can be sent for ``kind``."""
        return self.file_provider == provider and kind in self.file_id_kinds

    def with_(self, **changes: Any) -> Capabilities:
        """A copy with ``changes`` applied (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


def _allowed(table: Mapping[ContentKind, frozenset[str]], kind: ContentKind,
             mime: str | None) -> bool:
    allowed = table.get(kind)
    if allowed is None:
        return True
    return mime is not None and mime.split(";", 1)[0].strip().lower() in allowed


class CapabilityTable:
    """Model-id glob patterns → ``Capabilities``; the first matching pattern wins."""

    def __init__(self, provider: str, entries: Iterable[tuple[str, Capabilities]],
                 default: Capabilities) -> None:
        self.provider = provider
        self.entries = [(pattern.lower(), caps) for pattern, caps in entries]
        self.default = default

    def lookup(self, model: str) -> Capabilities:
        """The capabilities of ``model`` (case-insensitive glob match, else the default)."""
        name = model.lower()
        for pattern, caps in self.entries:
            if fnmatch.fnmatchcase(name, pattern):
                return caps
        return self.default

    def __repr__(self) -> str:
        return f"CapabilityTable({self.provider!r}, {len(self.entries)} patterns)"
