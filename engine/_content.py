"""The content model: kinds, handles and media sources.

A model can only pass strings, so bytes never travel through a conversation: they sit in a
content store and a short, unguessable handle id stands for them. A ``MediaSource`` says where
the bytes can be reached from (a URL, inline bytes, a provider's file store, a local path); the
rehost step turns one source into another that the destination provider can reach.
"""

from __future__ import annotations

import enum
import secrets
from typing import TypeAlias

import msgspec
from msgspec.structs import force_setattr

__all__ = [
    "ContentHandle",
    "ContentKind",
    "InlineSource",
    "LocalPathSource",
    "MediaSource",
    "ProviderFileSource",
    "UrlSource",
    "new_handle_id",
]


class ContentKind(enum.StrEnum):
    """What a piece of content is, coarsely: enough to route it to a provider or a tool."""

    IMAGE = "image"
    AUDIO = "audio"
    VIDEO = "video"
    DOCUMENT = "document"
    THREE_D = "3d"
    CAD = "cad"
    ARCHIVE = "archive"
    TEXT = "text"
    DATA = "data"
    OTHER = "other"


# 16 random bytes = 128 bits, rendered in URL-safe base32-ish alphabet: short enough for a model
# to copy, far past guessing. The prefix makes ids recognisable in tool arguments and logs.
HANDLE_PREFIX = "h_"


def new_handle_id() -> str:
    """Return a fresh handle id: ``h_`` + 26 lowercase base32 characters (128 random bits)."""
    import base64

    raw = base64.b32encode(secrets.token_bytes(16)).decode("ascii").rstrip("=").lower()
    return HANDLE_PREFIX + raw


class ContentHandle(msgspec.Struct, frozen=True, kw_only=False):
    """A reference to stored content: the only thing about content that enters a conversation.

    ``kind`` may be given as a ``ContentKind`` or its string value.
    """

    id: str
    kind: ContentKind
    mime_type: str | None = None
    byte_size: int | None = None
    display_name: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, ContentKind):
            force_setattr(self, "kind", ContentKind(self.kind))


class UrlSource(msgspec.Struct, frozen=True, tag="url"):
    """Bytes reachable at a URL (``https://``, ``gs://``, ``s3://``, or a presigned link)."""

    url: str
    mime_type: str | None = None


class InlineSource(msgspec.Struct, frozen=True, tag="inline"):
    """Bytes carried in the request itself (base64 on the wire)."""

    data: bytes
    mime_type: str


class ProviderFileSource(msgspec.Struct, frozen=True, tag="provider_file"):
    """A file already uploaded to a provider's file store.

    ``expires_at`` is a Unix timestamp (Gemini files expire after 48 h); ``uri`` is set where the
    provider references files by URI rather than by id.
    """

    provider: str
    file_id: str
    mime_type: str | None = None
    uri: str | None = None
    expires_at: float | None = None


class LocalPathSource(msgspec.Struct, frozen=True, tag="local_path"):
    """Bytes in a file on this machine; streamed, never read whole unless a wire format needs it."""

    path: str
    mime_type: str | None = None


MediaSource: TypeAlias = UrlSource | InlineSource | ProviderFileSource | LocalPathSource
"""Where a part's bytes can be reached from."""
