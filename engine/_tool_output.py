"""What a tool returns, split into what the calling code sees and what the model sees.

``ToolOutput(data, llm=...)`` keeps the two apart; a bare return value serves as both. The model's
side is normalised into parts: text stays text, JSON-able data becomes JSON text, parts stay
parts, and media parts carrying bytes (or a local path) are put into the run's store so later
turns can name them by handle instead of resending bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec
import pydantic_core

from ._content import InlineSource, LocalPathSource
from ._context import Context
from ._errors import ToolOutputError
from ._messages import ProviderRaw
from ._parts import Audio, Document, Image, MediaPart, Text, Video

__all__ = ["ToolOutput", "normalize_output", "provider_raw"]

T = TypeVar("T")

OutputPart = Text | Image | Audio | Video | Document


@dataclass(frozen=True, slots=True)
class ToolOutput(Generic[T]):
    """A tool's result: ``data`` for the calling code, ``llm`` for the model.

    ``llm`` may be text, JSON-able data, a part or a list of parts (strings become text parts),
    or ``provider_raw(provider, value)``. ``None`` means the model sees ``data``.
    """

    data: T
    llm: Any = None


def provider_raw(provider: str, value: Any) -> ProviderRaw:
    """Content sent verbatim to ``provider``; other providers get ``value`` converted as JSON."""
    return ProviderRaw(provider=provider, value=value)


def _is_part(value: object) -> bool:
    return isinstance(value, (Text, MediaPart))


def _to_json_text(value: Any, tool_name: str) -> str:
    if isinstance(value, msgspec.Struct):
        try:
            return msgspec.json.encode(value).decode()
        except (TypeError, msgspec.EncodeError) as exc:
            raise ToolOutputError(
                f"tool {tool_name!r} returned a {type(value).__name__} that cannot be "
                f"converted to JSON ({exc})"
            ) from None
    try:
        return pydantic_core.to_json(value).decode()
    except (pydantic_core.PydanticSerializationError, TypeError, ValueError) as exc:
        detail = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise ToolOutputError(
            f"tool {tool_name!r} returned a {type(value).__name__} that cannot be converted "
            f"to JSON ({detail}); return text, JSON-able data, parts, or a ToolOutput"
        ) from None


def _to_parts(value: Any, tool_name: str) -> list[OutputPart]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Text(value)]
    if _is_part(value):
        return [value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise ToolOutputError(
            f"tool {tool_name!r} returned raw bytes; wrap them in a part, e.g. "
            "Image.from_bytes(data, 'image/png') or Document.from_bytes(data, mime_type)"
        )
    if isinstance(value, (list, tuple)) and value and all(
        isinstance(item, str) or _is_part(item) for item in value
    ):
        return [Text(item) if isinstance(item, str) else item for item in value]
    return [Text(_to_json_text(value, tool_name))]


async def _store_part(part: OutputPart, ctx: Context | None) -> OutputPart:
    """Put a media part's bytes into the run's store and make its handle visible to the run."""
    if not isinstance(part, MediaPart) or ctx is None:
        return part
    if part.handle is not None:
        if part.handle.id not in ctx.handles:
            ctx.handles.add(part.handle)
        return part
    store = ctx.store
    source = part.source
    if store is None or not isinstance(source, (InlineSource, LocalPathSource)):
        return part
    body: bytes | str = source.data if isinstance(source, InlineSource) else source.path
    kind = None if isinstance(part, Document) else part.kind
    handle = await store.put(body, kind=kind, mime_type=part.media_type, display_name=part.name)
    ctx.handles.add(handle)
    return type(part).from_handle(handle)


async def normalize_output(value: Any, *, tool_name: str,
                           ctx: Context | None) -> tuple[list[OutputPart], ProviderRaw | None,
                                                         Any]:
    """Split a tool's return value into (parts for the model, provider-raw override, data).

    :raises ToolOutputError: the value (or ``llm``) cannot be turned into parts.
    :raises ContentError: a media part could not be put into the run's store.
    """
    if isinstance(value, ToolOutput):
        data, llm = value.data, (value.llm if value.llm is not None else value.data)
    else:
        data = llm = value
    raw: ProviderRaw | None = None
    if isinstance(llm, ProviderRaw):
        raw, llm = llm, llm.value
    parts = [await _store_part(part, ctx) for part in _to_parts(llm, tool_name)]
    return parts, raw, data
