"""Limits checked before any HTTP call: MIME allowlists, item size, item count, request size.

A provider that gets an oversized or unsupported part answers with a 400 after the whole body
went over the wire; preflight answers first with ``ContentRejected`` naming the part (its
position, kind, name and handle), the limit and the provider.

Extension point (used by the provider file stores): pass an ``Uploader`` to ``preflight``.
Violations that uploading fixes (an item too big to inline, a request too big in total) are then
resolved by ``await uploader.upload(part)``, whose ``MediaSource`` (usually a
``ProviderFileSource``) replaces the part's inline source; ``ContentRejected`` is raised only
for what remains.

    violations = find_violations(request.messages, caps)   # pure, no I/O but os.stat
    request = await preflight(request, caps, uploader=None) # raises ContentRejected
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from typing import Protocol

import msgspec

from plait import (
    Audio,
    ContentRejected,
    Document,
    Image,
    InlineSource,
    LocalPathSource,
    MediaSource,
    Message,
    ModelRequest,
    ProviderFileSource,
    Text,
    ToolResult,
    UrlSource,
    Video,
)
from plait._parts import MediaPart

from ._capabilities import Capabilities

__all__ = ["Uploader", "Violation", "check", "find_violations", "item_size", "preflight"]

_MEDIA = (Image, Audio, Video, Document)


class Uploader(Protocol):
    """A provider file store preflight may upload to instead of inlining."""

    def accepts(self, part: MediaPart) -> bool:
        """Whether this store can take ``part`` (kind, MIME type, size)."""
        ...

    async def upload(self, part: MediaPart) -> MediaSource:
        """Upload the part's bytes; return the source that now names them."""
        ...


@dataclasses.dataclass(frozen=True, slots=True)
class Violation:
    """One broken limit. ``uploadable``: a file store upload would fix it."""

    where: str
    limit: str
    message: str
    uploadable: bool = False
    path: tuple[int, ...] = ()

    def error(self, provider: str) -> ContentRejected:
        """The ``ContentRejected`` describing this violation."""
        return ContentRejected(f"{provider}: {self.where}: {self.message}",
                               provider=provider, part=self.where, limit=self.limit)


def item_size(part: MediaPart) -> int | None:
    """Raw byte size of an inline or local-path part (``None`` for URLs and file ids)."""
    source = part.source
    if isinstance(source, InlineSource):
        return len(source.data)
    if isinstance(source, LocalPathSource):
        try:
            return os.stat(source.path).st_size
        except OSError:
            return None
    return None


def find_violations(messages: list[Message], caps: Capabilities) -> list[Violation]:
    """Every limit of ``caps`` the media in ``messages`` break, in message order."""
    found: list[Violation] = []
    counts: dict[str, int] = {}
    total_items = 0
    inline_bytes = 0
    text_bytes = 0
    uploadable_total = False
    for path, where, part in _walk(messages):
        if isinstance(part, Text):
            text_bytes += len(part.text)
            continue
        if not caps.accepts(part.kind):
            continue  # placement turns it into a text note
        source = part.source
        if source is None:
            found.append(Violation(where, "resolved source", "the part has a handle but no "
                                   "source: resolve it (rehost step) before serializing",
                                   path=path))
            continue
        mime = part.media_type
        if not caps.mime_allowed(part.kind, mime):
            allowed = ", ".join(sorted(caps.mime_types.get(part.kind, ())))
            found.append(Violation(where, f"{part.kind} MIME types: {allowed}",
                                   f"MIME type {mime or 'unknown'} is not accepted for "
                                   f"{part.kind} (allowed: {allowed})", path=path))
        if isinstance(source, ProviderFileSource) and not caps.takes_file_id(
                part.kind, source.provider):
            found.append(Violation(where, "file ids of " + (caps.file_provider or "no provider"),
                                   f"a {source.provider} file id cannot be sent here for "
                                   f"{part.kind}: rehost it first", uploadable=True, path=path))
        elif isinstance(source, UrlSource) and part.kind not in caps.url_kinds:
            found.append(Violation(where, "URL fetching", f"{caps.provider} does not fetch "
                                   f"{part.kind} URLs: rehost it first", uploadable=True,
                                   path=path))
        total_items += 1
        kind = str(part.kind)
        counts[kind] = counts.get(kind, 0) + 1
        cap_kind = caps.max_items_per_kind.get(part.kind)
        if cap_kind is not None and counts[kind] == cap_kind + 1:
            found.append(Violation(where, f"{cap_kind} {kind} items per request",
                                   f"more than {cap_kind} {kind} items in one request",
                                   path=path))
        if caps.max_items is not None and total_items == caps.max_items + 1:
            found.append(Violation(where, f"{caps.max_items} media items per request",
                                   f"more than {caps.max_items} media items in one request",
                                   path=path))
        size = item_size(part)
        if size is None:
            continue
        uploadable_total = True
        inline_bytes += (size + 2) // 3 * 4
        limit = caps.max_item_bytes.get(part.kind)
        if limit is not None and size > limit:
            found.append(Violation(where, f"{limit} bytes per {kind} item",
                                   f"{size} bytes exceed the {limit}-byte limit for one "
                                   f"{kind} item", uploadable=True, path=path))
    total = inline_bytes + text_bytes
    if caps.max_request_bytes is not None and total > caps.max_request_bytes:
        found.append(Violation("request", f"{caps.max_request_bytes} bytes per request",
                               f"about {total} bytes of inline media and text exceed the "
                               f"{caps.max_request_bytes}-byte request limit",
                               uploadable=uploadable_total))
    return found


def check(messages: list[Message], caps: Capabilities) -> None:
    """Raise ``ContentRejected`` for the first violation of ``caps`` in ``messages``."""
    violations = find_violations(messages, caps)
    if violations:
        raise violations[0].error(caps.provider)


async def preflight(request: ModelRequest, caps: Capabilities, *,
                    uploader: Uploader | None = None) -> ModelRequest:
    """Check ``request`` against ``caps``; with an ``uploader``, upload what cannot be inlined.

    Returns the request (with uploaded sources swapped in). Raises ``ContentRejected``.
    """
    violations = find_violations(request.messages, caps)
    if not violations:
        return request
    if uploader is None or any(not v.uploadable for v in violations):
        bad = next((v for v in violations if not v.uploadable), violations[0])
        raise bad.error(caps.provider)
    targets = {v.path for v in violations if v.path}
    if any(not v.path for v in violations):  # total too big: move the largest inline items
        targets |= _largest_first(request.messages, caps)
    messages = list(request.messages)
    for path in sorted(targets):
        part = _get(messages, path)
        if not uploader.accepts(part):
            raise next(v for v in violations if v.path in (path, ())).error(caps.provider)
        source = await uploader.upload(part)
        messages = _set(messages, path, msgspec.structs.replace(part, source=source))
    request = msgspec.structs.replace(request, messages=messages)
    check(request.messages, caps)
    return request


def _walk(messages: list[Message]) -> Iterator[tuple[tuple[int, ...], str,
                                                     Text | MediaPart]]:
    for i, message in enumerate(messages):
        for j, part in enumerate(message.parts):
            if isinstance(part, Text | MediaPart):
                yield (i, j), _where(f"messages[{i}].parts[{j}]", part), part
            elif isinstance(part, ToolResult):
                for k, item in enumerate(part.output):
                    yield ((i, j, k), _where(f"messages[{i}].parts[{j}].output[{k}] "
                                             f"(tool call {part.call_id})", item), item)


def _where(position: str, part: Text | MediaPart) -> str:
    if isinstance(part, Text):
        return position
    bits = [str(part.kind)]
    if part.name:
        bits.append(repr(part.name))
    if part.handle:
        bits.append(f"handle {part.handle.id}")
    return f"{position} ({' '.join(bits)})"


def _largest_first(messages: list[Message], caps: Capabilities) -> set[tuple[int, ...]]:
    sized = [(item_size(p) or 0, path) for path, _, p in _walk(messages)
             if isinstance(p, MediaPart) and caps.accepts(p.kind) and item_size(p)]
    sized.sort(reverse=True)
    text = sum(len(p.text) for _, _, p in _walk(messages) if isinstance(p, Text))
    total = text + sum((s + 2) // 3 * 4 for s, _ in sized)
    chosen: set[tuple[int, ...]] = set()
    for size, path in sized:
        if caps.max_request_bytes is None or total <= caps.max_request_bytes:
            break
        chosen.add(path)
        total -= (size + 2) // 3 * 4
    return chosen


def _get(messages: list[Message], path: tuple[int, ...]) -> MediaPart:
    part = messages[path[0]].parts[path[1]]
    if len(path) == 3:
        assert isinstance(part, ToolResult)
        part = part.output[path[2]]
    assert isinstance(part, MediaPart)
    return part


def _set(messages: list[Message], path: tuple[int, ...], new: MediaPart) -> list[Message]:
    message = messages[path[0]]
    parts = list(message.parts)
    if len(path) == 3:
        result = parts[path[1]]
        assert isinstance(result, ToolResult)
        output = list(result.output)
        output[path[2]] = new  # type: ignore[call-overload]
        parts[path[1]] = msgspec.structs.replace(result, output=output)
    else:
        parts[path[1]] = new  # type: ignore[call-overload]
    messages[path[0]] = msgspec.structs.replace(message, parts=parts)
    return messages
