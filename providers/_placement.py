"""Where each media part goes: inside the tool result, in a follow-up user message, or a note.

Most APIs carry only text in a tool result (OpenAI Chat, the OpenAI-compatible family, Gemini
2.5, Ollama...). For them the tool message keeps the text plus a placeholder that names the call
id and item number, and after the **whole batch** of tool results **one** user message carries the
media, each item preceded by a label with its tool call id and item number, so the model can tell
them apart (tool results must come first in that turn; text before them is rejected).

A kind the destination cannot take at all (audio on a non-audio model, video on Claude...) becomes
a text note with its kind, name, handle id, MIME type and size, and a structlog warning: never a
silent drop, never a 400 from the provider.

The functions are pure transformations of canonical messages (``Message`` in, ``Message`` out;
parts are shared, bytes never copied), so a wire module calls ``place_media`` first and then
translates parts one to one. Usage::

    messages = place_media(pair_tool_results(request.messages), caps)
    # Mistral needs an assistant turn between the tool messages and the user message:
    messages = place_media(..., caps, bridge=Message.assistant("OK"))
"""

from __future__ import annotations

from plait import Audio, Document, Image, Message, Text, ToolResult, Video
from plait._parts import MediaPart

from ._capabilities import Capabilities
from ._log import logger

__all__ = ["media_label", "media_note", "media_placeholder", "place_media"]

_MEDIA = (Image, Audio, Video, Document)


def media_placeholder(call_id: str, item: int, part: MediaPart) -> str:
    """The text left in a tool result where media item ``item`` was moved out."""
    return (f"[item {item} of this result ({_describe(part)}) is attached in the next user "
            f"message, labelled tool call {call_id} item {item}]")


def media_label(call_id: str, item: int, part: MediaPart) -> str:
    """The text that precedes a moved media item in the follow-up user message."""
    return f"[tool call {call_id} item {item}: {_describe(part)}]"


def media_note(part: MediaPart, caps: Capabilities, *, where: str) -> Text:
    """A text note standing for a part the destination cannot take; logs a warning too."""
    handle = part.handle.id if part.handle else None
    size = part.byte_size
    logger.warning("media_not_supported", provider=caps.provider, family=caps.family,
                   kind=str(part.kind), mime_type=part.media_type, handle=handle,
                   size=size, name=part.name, where=where)
    return Text(f"[{part.kind} omitted: {caps.provider} ({caps.family}) does not accept "
                f"{part.kind} content; name={part.name or '-'}, handle={handle or '-'}, "
                f"mime={part.media_type or '-'}, size={_size(size)}]")


def place_media(messages: list[Message], caps: Capabilities, *,
                bridge: Message | None = None) -> list[Message]:
    """Return ``messages`` with every media part where ``caps`` says it may go (see module doc).

    ``bridge`` is inserted between a batch of tool messages and its follow-up user message
    (Mistral's dummy assistant turn). Tool messages are expected one per result, as produced by
    ``pair_tool_results``; consecutive tool messages form one batch.
    """
    out: list[Message] = []
    moved: list[Text | Image | Audio | Video | Document] = []
    for message in messages:
        if message.role != "tool" and moved:
            _flush(out, moved, bridge)
            moved = []
        if message.role == "tool":
            parts = [_place_result(p, caps, moved) if isinstance(p, ToolResult) else p
                     for p in message.parts]
            out.append(Message("tool", parts))
        elif any(isinstance(p, _MEDIA) for p in message.parts):
            out.append(Message(message.role, [
                p if not isinstance(p, _MEDIA) or p.kind in caps.user_kinds
                else media_note(p, caps, where=message.role)
                for p in message.parts
            ]))
        else:
            out.append(message)
    if moved:
        _flush(out, moved, bridge)
    return out


def _place_result(result: ToolResult, caps: Capabilities,
                  moved: list[Text | Image | Audio | Video | Document]) -> ToolResult:
    if not any(isinstance(p, _MEDIA) for p in result.output):
        return result
    output: list[Text | Image | Audio | Video | Document] = []
    for item, part in enumerate(result.output, start=1):
        if isinstance(part, Text):
            output.append(part)
            continue
        placement = caps.placement(part.kind, part.media_type)
        if placement == "tool_result":
            output.append(part)
        elif placement == "user":
            output.append(Text(media_placeholder(result.call_id, item, part)))
            moved.append(Text(media_label(result.call_id, item, part)))
            moved.append(part)
        else:
            output.append(media_note(part, caps, where="tool_result"))
    return ToolResult(result.call_id, result.name, output, result.is_error, result.raw)


def _flush(out: list[Message], moved: list[Text | Image | Audio | Video | Document],
           bridge: Message | None) -> None:
    if bridge is not None:
        out.append(bridge)
    out.append(Message("user", list(moved)))


def _describe(part: MediaPart) -> str:
    bits = [str(part.kind)]
    if part.name:
        bits.append(repr(part.name))
    if part.media_type:
        bits.append(part.media_type)
    if part.handle:
        bits.append(f"handle {part.handle.id}")
    return ", ".join(bits)


def _size(size: int | None) -> str:
    return "unknown" if size is None else f"{size} bytes"
