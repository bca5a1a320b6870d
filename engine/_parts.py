"""Content parts: the pieces a message or a tool result is made of.

A media part names its bytes by a ``MediaSource``, a ``ContentHandle``, or both: a part built
from a handle gets its source when the rehost step resolves the handle for the destination
provider. Serializers only ever look at ``source``.
"""

from __future__ import annotations

import mimetypes
import os
from typing import ClassVar, Self, TypeAlias

import msgspec

from ._content import (
    ContentHandle,
    ContentKind,
    InlineSource,
    LocalPathSource,
    MediaSource,
    UrlSource,
)

__all__ = ["Audio", "ContentPart", "Document", "Image", "MediaPart", "Text", "Video"]


class Text(msgspec.Struct, frozen=True, tag="text"):
    """Plain text."""

    text: str


class MediaPart(msgspec.Struct, frozen=True):
    """Common shape of image, audio, video and document parts."""

    kind: ClassVar[ContentKind] = ContentKind.OTHER

    source: MediaSource | None = None
    handle: ContentHandle | None = None
    mime_type: str | None = None
    name: str | None = None

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str, *, name: str | None = None) -> Self:
        """A part carrying ``data`` inline."""
        return cls(source=InlineSource(data=data, mime_type=mime_type), mime_type=mime_type,
                   name=name)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], mime_type: str | None = None, *,
                  name: str | None = None) -> Self:
        """A part whose bytes stay in a local file until a wire format needs them."""
        path = os.fspath(path)
        mime = mime_type or mimetypes.guess_type(path)[0]
        return cls(source=LocalPathSource(path=path, mime_type=mime), mime_type=mime,
                   name=name or os.path.basename(path))

    @classmethod
    def from_url(cls, url: str, mime_type: str | None = None, *, name: str | None = None) -> Self:
        """A part reachable at ``url``; fetched only for providers that do not fetch URLs."""
        return cls(source=UrlSource(url=url, mime_type=mime_type), mime_type=mime_type, name=name)

    @classmethod
    def from_handle(cls, handle: ContentHandle) -> Self:
        """A part standing for stored content; its source is resolved per destination."""
        return cls(handle=handle, mime_type=handle.mime_type, name=handle.display_name)

    @property
    def media_type(self) -> str | None:
        """The MIME type from the part, its source, or its handle, in that order."""
        if self.mime_type:
            return self.mime_type
        src_mime = getattr(self.source, "mime_type", None)
        if src_mime:
            return str(src_mime)
        return self.handle.mime_type if self.handle else None

    @property
    def byte_size(self) -> int | None:
        """Size in bytes when known without I/O."""
        if isinstance(self.source, InlineSource):
            return len(self.source.data)
        return self.handle.byte_size if self.handle else None


class Image(MediaPart, frozen=True, tag="image"):
    """An image (PNG, JPEG, WebP, GIF, HEIC...)."""

    kind: ClassVar[ContentKind] = ContentKind.IMAGE


class Audio(MediaPart, frozen=True, tag="audio"):
    """Audio (WAV, MP3, OGG, FLAC, M4A...)."""

    kind: ClassVar[ContentKind] = ContentKind.AUDIO


class Video(MediaPart, frozen=True, tag="video"):
    """Video (MP4, MOV, WebM, MKV...)."""

    kind: ClassVar[ContentKind] = ContentKind.VIDEO


class Document(MediaPart, frozen=True, tag="document"):
    """Any other file: PDF, text, spreadsheet, archive, 3D model, CAD drawing..."""

    kind: ClassVar[ContentKind] = ContentKind.DOCUMENT


ContentPart: TypeAlias = Text | Image | Audio | Video | Document
"""A part of user content or of a tool result."""
