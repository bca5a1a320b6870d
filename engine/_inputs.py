"""Content parameters of tools: what a model passes as a handle id, what the tool receives.

In the schema the model sees, a content parameter is a string with an ``x-plait-content-ref``
marker naming the kind it takes. When the tool runs, the parameter holds a ``ContentInput`` (or
``ImageInput``...) carrying the handle's metadata, its ``MediaSource`` and ways to read the
bytes. The lookup happens during pydantic validation, against the run's ``HandleScope`` passed as
validation context, so content refs work wherever pydantic validates: nested models, lists,
optional fields, unions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from ._content import ContentHandle, ContentKind, MediaSource
from ._errors import ContentError
from ._scope import HandleScope
from ._store import ContentStore

__all__ = [
    "AudioInput",
    "ContentInput",
    "FileInput",
    "ImageInput",
    "ResolveContext",
    "VideoInput",
    "accepts_kind",
    "content_input_class",
    "content_ref_schema",
]

CONTENT_REF_KEY = "x-plait-content-ref"


def content_ref_schema(kind: ContentKind | str) -> dict[str, Any]:
    """The JSON Schema of a content parameter of ``kind``."""
    return {"type": "string", CONTENT_REF_KEY: {"kind": str(ContentKind(kind))}}


def accepts_kind(wanted: ContentKind | str, actual: ContentKind) -> bool:
    """Whether a parameter of kind ``wanted`` takes content of kind ``actual``.

    ``document`` parameters take any file: a PDF, an image or a CAD drawing are all documents
    to a tool that reads files.
    """
    wanted_kind = ContentKind(wanted)
    return wanted_kind is ContentKind.DOCUMENT or wanted_kind is actual


class ResolveContext:
    """What validation needs to turn ids into content: the run's scope and store.

    ``created`` collects every content object built, so that their sources can be resolved
    (an async call) once validation, which is synchronous, has finished.
    """

    __slots__ = ("created", "scope", "store")

    def __init__(self, scope: HandleScope, store: ContentStore | None) -> None:
        self.scope = scope
        self.store = store
        self.created: list[ContentInput] = []


def _short(value: str) -> str:
    return repr(value if len(value) <= 64 else value[:61] + "...")


class ContentInput:
    """Content handed to a tool: handle metadata, ``source``, ``await read()``, ``stream()``.

    As a parameter annotation, ``ContentInput`` (like ``FileInput``) takes content of any kind;
    ``ContentInput[kind]`` takes one kind (``ContentInput["3d"]``, ``ContentInput[ContentKind.CAD]``).
    """

    schema_kind: ClassVar[ContentKind] = ContentKind.DOCUMENT
    _by_kind: ClassVar[dict[ContentKind, type[ContentInput]]] = {}

    __slots__ = ("handle", "source", "store")

    def __init__(self, handle: ContentHandle, store: ContentStore | None = None,
                 source: MediaSource | None = None) -> None:
        self.handle = handle
        self.store = store
        self.source = source

    def __class_getitem__(cls, kind: ContentKind | str) -> type[ContentInput]:
        return content_input_class(kind)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(id={self.id!r}, kind={self.kind.value!r}, "
                f"mime_type={self.mime_type!r}, byte_size={self.byte_size!r})")

    @property
    def id(self) -> str:
        """The handle id."""
        return self.handle.id

    @property
    def kind(self) -> ContentKind:
        """The content's kind."""
        return self.handle.kind

    @property
    def mime_type(self) -> str | None:
        """The content's MIME type, when known."""
        return self.handle.mime_type

    @property
    def byte_size(self) -> int | None:
        """The content's size in bytes, when known."""
        return self.handle.byte_size

    @property
    def display_name(self) -> str | None:
        """The content's file name or label, when known."""
        return self.handle.display_name

    def _require_store(self) -> ContentStore:
        if self.store is None:
            raise ContentError(f"content {self.id!r} cannot be read: the run has no content store")
        return self.store

    async def read(self) -> bytes:
        """All the content's bytes.

        :raises ContentError: no store, or the store cannot read it (``ContentNotFound``).
        """
        return await self._require_store().fetch_bytes(self.handle)

    def stream(self) -> AsyncIterator[bytes]:
        """The content's bytes in chunks, straight from the store.

        :raises ContentError: no store, or the store cannot read it (``ContentNotFound``).
        """
        return self._require_store().fetch_stream(self.handle)

    # --- pydantic integration ---------------------------------------------------------------------

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any,
                                     handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.with_info_plain_validator_function(
            cls._validate,
            json_schema_input_schema=core_schema.str_schema(),
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda value: value.id if isinstance(value, ContentInput) else value
            ),
        )

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: CoreSchema,
                                     handler: GetJsonSchemaHandler) -> dict[str, Any]:
        return content_ref_schema(cls.schema_kind)

    @classmethod
    def _validate(cls, value: object, info: core_schema.ValidationInfo) -> ContentInput:
        if isinstance(value, ContentInput):
            handle = value.handle
            if not accepts_kind(cls.schema_kind, handle.kind):
                raise cls._mismatch(handle)
            return value
        if not isinstance(value, str):
            raise PydanticCustomError(
                "plait_content_ref_type", "expected a content handle id (a string)"
            )
        ctx = info.context
        if not isinstance(ctx, ResolveContext):
            raise PydanticCustomError(
                "plait_no_scope", "content ids can only be resolved inside a run"
            )
        if value not in ctx.scope:
            raise PydanticCustomError(
                "plait_unknown_handle",
                "no content handle {handle_id} is visible in this run",
                {"handle_id": _short(value)},
            )
        handle = ctx.scope.get(value)
        if not accepts_kind(cls.schema_kind, handle.kind):
            raise cls._mismatch(handle)
        obj = cls(handle, ctx.store)
        ctx.created.append(obj)
        return obj

    @classmethod
    def _mismatch(cls, handle: ContentHandle) -> PydanticCustomError:
        return PydanticCustomError(
            "plait_kind_mismatch",
            "content {handle_id} is {actual} ({mime}), but this parameter takes {wanted}",
            {"handle_id": _short(handle.id), "actual": handle.kind.value,
             "mime": handle.mime_type or "unknown type", "wanted": _wanted(cls.schema_kind)},
        )


def _wanted(kind: ContentKind) -> str:
    if kind is ContentKind.DOCUMENT:
        return "any file"
    return f"{kind.value} content only"


class ImageInput(ContentInput):
    """An image parameter: the model passes the id of image content."""

    schema_kind: ClassVar[ContentKind] = ContentKind.IMAGE
    __slots__ = ()


class AudioInput(ContentInput):
    """An audio parameter: the model passes the id of audio content."""

    schema_kind: ClassVar[ContentKind] = ContentKind.AUDIO
    __slots__ = ()


class VideoInput(ContentInput):
    """A video parameter: the model passes the id of video content."""

    schema_kind: ClassVar[ContentKind] = ContentKind.VIDEO
    __slots__ = ()


class FileInput(ContentInput):
    """A file parameter: takes content of any kind (documents accept any file)."""

    schema_kind: ClassVar[ContentKind] = ContentKind.DOCUMENT
    __slots__ = ()


def content_input_class(kind: ContentKind | str) -> type[ContentInput]:
    """The ``ContentInput`` subclass for parameters of ``kind`` (``ImageInput`` for images...).

    :raises ValueError: ``kind`` is not a ``ContentKind`` value.
    """
    kind = ContentKind(kind)
    if kind not in ContentInput._by_kind:
        name = f"ContentInput[{kind.value}]"
        ContentInput._by_kind[kind] = type(name, (ContentInput,), {
            "schema_kind": kind, "__slots__": (), "__qualname__": name,
        })
    return ContentInput._by_kind[kind]


ContentInput._by_kind.update({
    ContentKind.IMAGE: ImageInput,
    ContentKind.AUDIO: AudioInput,
    ContentKind.VIDEO: VideoInput,
    ContentKind.DOCUMENT: FileInput,
})
