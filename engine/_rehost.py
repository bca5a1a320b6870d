"""The rehost step: make every media part of a conversation reachable by one destination.

A conversation may carry content that another provider holds (an OpenAI file id), content in
the run's own store (memory, local files), or URLs. Before a request is serialized for a
destination, each part gets a source that destination can read:

- its own file id → kept (re-uploaded from the origin first if it expired);
- another provider's file id → inlined when small enough and the kind may be inlined, else
  streamed from the store that holds it into the destination's file store;
- inline bytes or a local path → kept when within the inline limit, else uploaded to the
  destination's file store if one is wired, else ``ContentRejected`` before any request;
- a URL → kept where the destination fetches URLs of that kind, else uploaded (streamed) or
  fetched and inlined.

Results are cached per (content, destination provider), so a conversation that resends the same
media every turn moves its bytes once. Bytes always move as streams: memory stays flat.

The destination's facts come from a ``MediaFacts`` (the providers' ``Capabilities`` satisfy it);
this module imports no concrete provider or store.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

import anyio
import msgspec

from ._aio import first_error
from ._content import (
    ContentHandle,
    ContentKind,
    InlineSource,
    LocalPathSource,
    MediaSource,
    ProviderFileSource,
    UrlSource,
    new_handle_id,
)
from ._errors import ContentNotFound, ContentRejected
from ._messages import Message, ToolResult
from ._parts import MediaPart
from ._progress import ProgressCallback
from ._store import Body, ContentStore
from .telemetry._current import current as current_telemetry
from .telemetry._semconv import CONTENT_ACTION

__all__ = [
    "FileStore",
    "MediaFacts",
    "MediaMove",
    "Rehoster",
    "rehost_messages",
]

# Without a stated per-item limit, inline up to this (Gemini's documented total is 20 MB).
DEFAULT_INLINE_LIMIT = 20 * 1024 * 1024


class MediaFacts(Protocol):
    """What the rehost step must know about a destination (``Capabilities`` has all of it)."""

    @property
    def provider(self) -> str:
        """The destination provider's name."""
        ...

    @property
    def url_kinds(self) -> frozenset[ContentKind]:
        """Kinds the provider fetches from a URL itself."""
        ...

    @property
    def file_provider(self) -> str | None:
        """Whose file store's ids the destination reads (``"openai"`` for OpenAI Responses)."""
        ...

    @property
    def max_item_bytes(self) -> Mapping[ContentKind, int]:
        """Inline limit per item, by kind (raw bytes)."""
        ...

    @property
    def max_request_bytes(self) -> int | None:
        """The whole request's limit: the inline ceiling where no per-kind limit is given."""
        ...

    def accepts(self, kind: ContentKind) -> bool:
        """Whether the destination takes the kind at all."""
        ...

    def takes_file_id(self, kind: ContentKind, provider: str) -> bool:
        """Whether a file id of ``provider`` can be sent for ``kind``."""
        ...


class FileStore(Protocol):
    """A provider file store as the rehost step uses it (``plait.stores.ProviderFileStore``)."""

    provider: str

    def holds(self, handle: ContentHandle | str) -> bool:
        """Whether a live file for the handle is recorded (no I/O)."""
        ...

    async def resolve(self, handle: ContentHandle, *,
                      for_provider: str | None = None) -> MediaSource:
        """The provider file for the handle (re-uploaded if expired)."""
        ...

    async def copy_from(self, origin: ContentStore, handle: ContentHandle, *,
                        on_progress: ProgressCallback | None = None) -> ProviderFileSource:
        """Upload the handle's bytes, streamed from ``origin``."""
        ...

    async def upload_for(self, handle: ContentHandle, body: Body, *,
                         on_progress: ProgressCallback | None = None) -> ProviderFileSource:
        """Upload ``body`` as the bytes of ``handle``."""
        ...


class MediaMove(msgspec.Struct, frozen=True):
    """Where one media part went for one destination: for logs, the CLI and the demo.

    ``action`` is ``"kept"`` (already reachable), ``"inline"`` (bytes in the request),
    ``"file"`` (the destination's file id, already there), ``"uploaded"`` (streamed into the
    destination's file store now), ``"url"`` (the provider fetches it) or ``"skipped"`` (the
    destination does not take the kind; the serializer turns it into a note).
    """

    provider: str
    kind: str
    action: str
    handle_id: str | None = None
    origin: str = ""
    detail: str = ""
    in_tool_result: bool = False


MediaMoveCallback: TypeAlias = Callable[[MediaMove], None]


@dataclass
class _Entry:
    source: MediaSource
    move: MediaMove


@dataclass
class Rehoster:
    """Rehosts parts for any destination; holds the per-(content, provider) cache.

    ``stores`` are where handles live (the run's store first, then provider file stores);
    ``file_stores`` maps a provider name to its file store (destinations and origins of
    provider file ids). ``upload_over`` (bytes) sends items larger than that through the
    destination's file store even when they could be inlined: a video resent every turn is
    cheaper as a file id. ``concurrency`` bounds parallel transfers.
    """

    stores: Sequence[ContentStore] = ()
    file_stores: Mapping[str, FileStore] = field(default_factory=dict)
    on_progress: ProgressCallback | None = None
    upload_over: int | None = None
    concurrency: int = 4
    _cache: dict[tuple[str, str], _Entry] = field(default_factory=dict, init=False, repr=False)
    _homes: dict[str, ContentStore] = field(default_factory=dict, init=False, repr=False)
    _locks: dict[tuple[str, str], anyio.Lock] = field(default_factory=dict, init=False,
                                                      repr=False)

    # --- lookups ------------------------------------------------------------------------------

    async def home_of(self, handle: ContentHandle) -> tuple[ContentStore, ContentHandle]:
        """The store that holds ``handle`` and its full metadata there.

        :raises ContentNotFound: no configured store holds it.
        """
        cached = self._homes.get(handle.id)
        candidates = [cached] if cached is not None else []
        candidates += [s for s in self.stores if s is not cached]
        candidates += [s for s in self.file_stores.values()  # type: ignore[misc]
                       if isinstance(s, ContentStore) and s not in candidates]
        for store in candidates:
            try:
                full = await store.metadata(handle)
            except ContentNotFound:
                continue
            self._homes[handle.id] = store
            return store, full
        raise ContentNotFound(f"no store holds content {handle.id!r}")

    def _lock(self, key: tuple[str, str]) -> anyio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        return lock

    # --- the step -----------------------------------------------------------------------------

    async def rehost(self, messages: list[Message], facts: MediaFacts, *,
                     on_move: MediaMoveCallback | None = None,
                     on_progress: ProgressCallback | None = None) -> list[Message]:
        """``messages`` with every media part's source reachable by ``facts.provider``.

        :raises ContentRejected: a part can reach the destination in no way (too big to
            inline and no file store wired, or a kind it cannot take by file or inline).
        :raises ContentNotFound: a handle names content no configured store holds.
        """
        found = list(_media(messages))
        if not found:
            return messages
        done: dict[int, MediaPart] = {}
        limiter = anyio.CapacityLimiter(self.concurrency)

        async def one(item: tuple[MediaPart, bool]) -> None:
            part, in_result = item
            async with limiter:
                done[id(part)] = await self.rehost_part(
                    part, facts, on_move=on_move, on_progress=on_progress,
                    in_tool_result=in_result)

        unique = list({id(p): (p, r) for p, r in found}.values())
        if len(unique) == 1:
            await one(unique[0])
        else:
            try:
                async with anyio.create_task_group() as tg:
                    for part in unique:
                        tg.start_soon(one, part)
            except BaseExceptionGroup as group:
                raise first_error(group) from None
        return _replace(messages, done)

    async def rehost_part(self, part: MediaPart, facts: MediaFacts, *,
                          on_move: MediaMoveCallback | None = None,
                          on_progress: ProgressCallback | None = None,
                          in_tool_result: bool = False) -> MediaPart:
        """One part with a source the destination can reach (see the module docstring).

        :raises ContentRejected: no way to reach the destination.
        """
        kind = part.handle.kind if part.handle is not None else part.kind
        if not facts.accepts(kind):
            move = MediaMove(facts.provider, str(kind), "skipped",
                             part.handle.id if part.handle else None,
                             detail=f"{facts.provider} takes no {kind}",
                             in_tool_result=in_tool_result)
            if on_move:
                on_move(move)
            return part
        key = (_identity(part), facts.provider)
        async with self._lock(key):
            entry = self._cache.get(key)
            if entry is None or not await self._still_valid(entry):
                with current_telemetry().content_transfer(
                        "rehost", destination=facts.provider,
                        handle_id=part.handle.id if part.handle else None,
                        mime_type=part.media_type, byte_size=part.byte_size) as span:
                    entry = await self._route(part, kind, facts, on_progress or self.on_progress)
                    span.set_attribute(CONTENT_ACTION, entry.move.action)
                self._cache[key] = entry
        if on_move:
            on_move(msgspec.structs.replace(entry.move, in_tool_result=in_tool_result))
        if entry.source is part.source:
            return part
        return msgspec.structs.replace(part, source=entry.source)

    async def _still_valid(self, entry: _Entry) -> bool:
        source = entry.source
        if not isinstance(source, ProviderFileSource) or entry.move.handle_id is None:
            return True
        store = self.file_stores.get(source.provider)
        return store is None or store.holds(entry.move.handle_id)

    async def _route(self, part: MediaPart, kind: ContentKind, facts: MediaFacts,
                     progress: ProgressCallback | None) -> _Entry:
        dest = facts.provider
        files = facts.file_provider or ""  # whose file ids the destination reads
        handle = part.handle
        source = part.source
        target = self.file_stores.get(files) if files else None
        home: ContentStore | None = None
        if source is None:
            if handle is None:
                raise ContentRejected("a media part has neither a source nor a handle",
                                      provider=dest)
            if target is not None and target.holds(handle) and facts.takes_file_id(kind, files):
                found = await target.resolve(handle, for_provider=dest)
                return _Entry(found, MediaMove(dest, kind, "file", handle.id, files))
            home, handle = await self.home_of(handle)
            source = await home.resolve(handle, for_provider=dest)
        origin = _origin_name(source, home)
        handle_id = handle.id if handle else None
        limit = inline_limit(facts, kind)

        def move(action: str, detail: str = "") -> MediaMove:
            return MediaMove(dest, str(kind), action, handle_id, origin, detail)

        if isinstance(source, ProviderFileSource):
            if source.provider == files and facts.takes_file_id(kind, files):
                return _Entry(source, move("file", source.file_id))
            origin_store = home or self._store_for(source)
            if origin_store is None:
                raise ContentRejected(
                    f"{dest} cannot read a {source.provider} file and no {source.provider} "
                    "file store is wired to read it from", provider=dest,
                    part=handle_id, limit=f"file ids of {source.provider}")
            if handle is None:
                handle = await _attach(origin_store, source, kind)
            size = handle.byte_size
            if size is not None and size <= limit and not _too_big_overall(size):
                data = await origin_store.fetch_bytes(handle)
                mime = handle.mime_type or source.mime_type or part.media_type
                return _Entry(InlineSource(data, mime or "application/octet-stream"),
                              move("inline", f"{size} bytes"))
            return await self._upload(target, facts, kind, handle, origin_store, move,
                                      size=size, limit=limit, progress=progress)

        if isinstance(source, UrlSource):
            if kind in facts.url_kinds:
                return _Entry(source, move("url", source.url))
            mime = source.mime_type or part.media_type or "application/octet-stream"
            if target is not None and facts.takes_file_id(kind, files):
                handle = handle or _synthetic(part, kind, mime)
                uploaded = await target.upload_for(handle, source.url,
                                                   on_progress=progress)
                return _Entry(uploaded, move("uploaded", f"fetched {source.url}"))
            fetched = await self._fetch(source.url, limit)
            if fetched is None:
                raise ContentRejected(
                    f"{dest} does not fetch {kind} URLs, the content is over the "
                    f"{limit}-byte inline limit and no {dest} file store is wired",
                    provider=dest, part=handle_id, limit=f"{limit} bytes inline")
            return _Entry(InlineSource(fetched, mime), move("inline", f"fetched {source.url}"))

        # Inline bytes or a local path: keep them when small enough, else upload.
        size = _local_size(source)
        prefer_file = (self.upload_over is not None and size is not None
                       and size > self.upload_over and target is not None
                       and facts.takes_file_id(kind, files))
        if size is not None and size <= limit and not prefer_file:
            action = "inline"
            return _Entry(source, move(action, f"{size} bytes"))
        if target is None or not facts.takes_file_id(kind, files):
            raise ContentRejected(
                f"{size} bytes of {kind} exceed {dest}'s {limit}-byte inline limit and no "
                f"{dest} file store is wired", provider=dest, part=handle_id,
                limit=f"{limit} bytes inline")
        if home is not None and handle is not None:
            uploaded = await target.copy_from(home, handle, on_progress=progress)
        else:
            body: Body = source.data if isinstance(source, InlineSource) else source.path
            handle = handle or _synthetic(part, kind, part.media_type or source.mime_type)
            uploaded = await target.upload_for(handle, body, on_progress=progress)
        return _Entry(uploaded, move("uploaded", _uploaded(uploaded, size)))

    async def _upload(self, target: FileStore | None, facts: MediaFacts, kind: ContentKind,
                      handle: ContentHandle, origin: ContentStore,
                      move: Callable[[str, str], MediaMove], *, size: int | None,
                      limit: int, progress: ProgressCallback | None) -> _Entry:
        dest = facts.provider
        if target is None or not facts.takes_file_id(kind, facts.file_provider or ""):
            raise ContentRejected(
                f"{handle.id}: {size if size is not None else 'unknown'} bytes of {kind} are "
                f"over {dest}'s {limit}-byte inline limit and no {dest} file store is wired "
                "to upload them to", provider=dest, part=handle.id,
                limit=f"{limit} bytes inline")
        uploaded = await target.copy_from(origin, handle, on_progress=progress)
        return _Entry(uploaded, move("uploaded", _uploaded(uploaded, size)))

    def uploader_for(self, facts: MediaFacts) -> _Uploader | None:
        """A preflight uploader for the destination's file store (``None`` when none is wired).

        Preflight uses it when a request is too big as a whole although each item fits: it
        uploads the largest inline items instead of refusing the request.
        """
        files = facts.file_provider
        target = self.file_stores.get(files) if files else None
        if target is None or files is None:
            return None
        return _Uploader(self, target, facts, files)

    def _store_for(self, source: ProviderFileSource) -> ContentStore | None:
        store = self.file_stores.get(source.provider)
        return store if isinstance(store, ContentStore) else None

    async def _fetch(self, url: str, limit: int) -> bytes | None:
        """The URL's bytes, or ``None`` when they exceed ``limit`` (reading stops there)."""
        import httpx

        from ._errors import ProviderError

        buf = bytearray()
        async with httpx.AsyncClient(follow_redirects=True, timeout=60.0) as client, \
                client.stream("GET", url) as response:
            if response.status_code >= 400:
                raise ProviderError(f"fetching a media URL failed ({response.status_code})",
                                    provider="url", status=response.status_code)
            declared = response.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                return None
            # Reading on past the limit (discarding) rather than breaking out keeps httpx's
            # nested stream generators closed in order, which trio insists on.
            over = False
            async for chunk in response.aiter_bytes():
                if not over:
                    buf += chunk
                    if len(buf) > limit:
                        over, buf = True, bytearray()
            if over:
                return None
        return bytes(buf)


def inline_limit(facts: MediaFacts, kind: ContentKind) -> int:
    """The most bytes of ``kind`` the destination takes inline in one item.

    The per-kind limit, else the request limit less room for base64 (4/3) and the rest of the
    request, else ``DEFAULT_INLINE_LIMIT``.
    """
    limit = facts.max_item_bytes.get(kind)
    if limit is not None:
        return limit
    if facts.max_request_bytes is not None:
        return facts.max_request_bytes * 3 // 4 - 64 * 1024
    return DEFAULT_INLINE_LIMIT


@dataclass
class _Uploader:
    """``plait.providers.Uploader`` over a destination file store."""

    rehoster: Rehoster
    target: FileStore
    facts: MediaFacts
    files: str

    def accepts(self, part: MediaPart) -> bool:
        """Whether the destination reads this kind by file id."""
        kind = part.handle.kind if part.handle is not None else part.kind
        return self.facts.takes_file_id(kind, self.files)

    async def upload(self, part: MediaPart) -> MediaSource:
        """Upload the part's bytes (from its handle's store, else its inline bytes or path).

        :raises ContentRejected: the part has no bytes to upload.
        """
        if part.handle is not None:
            try:
                home, handle = await self.rehoster.home_of(part.handle)
            except ContentNotFound:
                pass
            else:
                return await self.target.copy_from(home, handle,
                                                   on_progress=self.rehoster.on_progress)
        source = part.source
        if not isinstance(source, InlineSource | LocalPathSource):
            raise ContentRejected("only inline or local content can be uploaded here",
                                  provider=self.facts.provider)
        kind = part.handle.kind if part.handle is not None else part.kind
        handle = part.handle or _synthetic(part, kind, part.media_type or source.mime_type)
        body: Body = source.data if isinstance(source, InlineSource) else source.path
        return await self.target.upload_for(handle, body, on_progress=self.rehoster.on_progress)


async def rehost_messages(messages: list[Message], facts: MediaFacts, *,
                          stores: Iterable[ContentStore] = (),
                          file_stores: Mapping[str, FileStore] | None = None,
                          on_progress: ProgressCallback | None = None) -> list[Message]:
    """One-shot rehost (no cache kept across calls); see ``Rehoster.rehost``.

    :raises ContentRejected: a part cannot reach the destination.
    """
    rehoster = Rehoster(list(stores), dict(file_stores or {}), on_progress)
    return await rehoster.rehost(messages, facts)


# --- helpers ------------------------------------------------------------------------------------


def _media(messages: list[Message]) -> Iterable[tuple[MediaPart, bool]]:
    """Every media part, with whether it sits inside a tool result."""
    for message in messages:
        for part in message.parts:
            if isinstance(part, MediaPart):
                yield part, False
            elif isinstance(part, ToolResult):
                yield from ((p, True) for p in part.output if isinstance(p, MediaPart))


def _replace(messages: list[Message], done: dict[int, MediaPart]) -> list[Message]:
    out: list[Message] = []
    for message in messages:
        changed = False
        parts: list[object] = []
        for part in message.parts:
            new: object = part
            if isinstance(part, MediaPart):
                new = done.get(id(part), part)
            elif isinstance(part, ToolResult):
                output = [done.get(id(p), p) if isinstance(p, MediaPart) else p
                          for p in part.output]
                if any(a is not b for a, b in zip(output, part.output, strict=True)):
                    new = msgspec.structs.replace(part, output=output)
            changed = changed or new is not part
            parts.append(new)
        out.append(msgspec.structs.replace(message, parts=parts) if changed else message)
    return out


def _uploaded(source: ProviderFileSource, size: int | None) -> str:
    return f"{source.file_id}, {size} bytes" if size is not None else source.file_id


def _identity(part: MediaPart) -> str:
    """What the cache keys a part by: its handle, else where its bytes are."""
    if part.handle is not None:
        return part.handle.id
    source = part.source
    if isinstance(source, ProviderFileSource):
        return f"file:{source.provider}:{source.file_id}"
    if isinstance(source, UrlSource):
        return f"url:{source.url}"
    if isinstance(source, LocalPathSource):
        return f"path:{os.path.realpath(source.path)}"
    if isinstance(source, InlineSource):
        return "sha256:" + hashlib.sha256(source.data).hexdigest()
    return f"part:{id(part)}"


def _origin_name(source: MediaSource, home: ContentStore | None) -> str:
    if isinstance(source, ProviderFileSource):
        return source.provider
    if isinstance(source, UrlSource):
        return "url"
    if isinstance(source, LocalPathSource):
        return "local file"
    return type(home).__name__ if home is not None else "inline"


def _local_size(source: InlineSource | LocalPathSource) -> int | None:
    if isinstance(source, InlineSource):
        return len(source.data)
    try:
        return os.stat(source.path).st_size
    except OSError as exc:
        raise ContentNotFound(f"cannot read local file {os.path.basename(source.path)!r}: "
                              f"{exc.strerror}") from None


def _too_big_overall(size: int) -> bool:
    """Inline-able items above this still go by file: a request this big is slow to resend."""
    return size > DEFAULT_INLINE_LIMIT


def _synthetic(part: MediaPart, kind: ContentKind, mime: str | None) -> ContentHandle:
    """A handle for a part that came without one (bytes, a path or a URL given directly)."""
    return ContentHandle(new_handle_id(), kind, mime, part.byte_size, part.name)


async def _attach(store: ContentStore, source: ProviderFileSource,
                  kind: ContentKind) -> ContentHandle:
    attach = getattr(store, "attach", None)
    if attach is None:
        raise ContentRejected(f"cannot read {source.provider} file {source.file_id!r}",
                              provider=source.provider)
    handle: ContentHandle = await attach(source.file_id, kind=kind, mime_type=source.mime_type)
    return handle
