"""The canonical conversation model every provider module translates to and from.

Provider modules are pure functions between these structs and each wire API; nothing here knows
about any provider. Tool calls, tool results and reasoning are parts of a message, so a turn's
order is the order of its parts.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import msgspec

from ._parts import Audio, Document, Image, Text, Video

__all__ = [
    "FinishDelta",
    "GenerationOptions",
    "Message",
    "MessagePart",
    "ModelReply",
    "ModelRequest",
    "ProviderRaw",
    "Reasoning",
    "ReasoningDelta",
    "Role",
    "StreamDelta",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "UsageDelta",
]

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]


class ProviderRaw(msgspec.Struct, frozen=True, tag="provider_raw"):
    """A value sent verbatim to one named provider; other providers get the default conversion."""

    provider: str
    value: Any


class ToolCall(msgspec.Struct, frozen=True, tag="tool_call"):
    """A model's request to run a tool.

    ``arguments`` is the JSON text exactly as the model produced it (it may be malformed: the
    resolver reports that to the model). ``signature`` carries an opaque token the provider needs
    echoed back with the call (Gemini's ``thoughtSignature``).
    """

    id: str
    name: str
    arguments: str = "{}"
    signature: str | None = None


class ToolResult(msgspec.Struct, frozen=True, tag="tool_result"):
    """The answer to one ``ToolCall``: text and media parts, optionally a provider-raw override."""

    call_id: str
    name: str
    output: list[Text | Image | Audio | Video | Document] = msgspec.field(default_factory=list)
    is_error: bool = False
    raw: ProviderRaw | None = None


class Reasoning(msgspec.Struct, frozen=True, tag="reasoning"):
    """Model reasoning to replay on the next turn where the provider requires it.

    ``signature`` is Anthropic's thinking signature; ``data`` holds opaque/encrypted content
    (Anthropic redacted thinking, OpenAI ``encrypted_content``); ``id`` is the provider's item id.
    """

    text: str = ""
    provider: str | None = None
    signature: str | None = None
    data: str | None = None
    id: str | None = None


MessagePart: TypeAlias = Text | Image | Audio | Video | Document | ToolCall | ToolResult | Reasoning
"""Anything a message can hold."""


class Message(msgspec.Struct, frozen=True):
    """One turn of a conversation. Tool results travel in ``role="tool"`` messages."""

    role: Role
    parts: list[MessagePart] = msgspec.field(default_factory=list)

    @classmethod
    def user(cls, *parts: MessagePart | str) -> Message:
        """A user message; plain strings become ``Text`` parts."""
        return cls("user", [Text(p) if isinstance(p, str) else p for p in parts])

    @classmethod
    def assistant(cls, *parts: MessagePart | str) -> Message:
        """An assistant message; plain strings become ``Text`` parts."""
        return cls("assistant", [Text(p) if isinstance(p, str) else p for p in parts])

    @property
    def text(self) -> str:
        """The concatenated text parts."""
        return "".join(p.text for p in self.parts if isinstance(p, Text))

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls in this message, in order."""
        return [p for p in self.parts if isinstance(p, ToolCall)]


class ToolSpec(msgspec.Struct, frozen=True):
    """A tool as a model sees it: a name, a description and a JSON Schema for its arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


class GenerationOptions(msgspec.Struct, frozen=True):
    """Sampling options; ``None`` means the provider's default. ``extra`` is merged verbatim."""

    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    stop: list[str] | None = None
    seed: int | None = None
    reasoning_effort: str | None = None
    extra: dict[str, Any] | None = None


class ModelRequest(msgspec.Struct, frozen=True):
    """Everything a provider module needs to build one request.

    ``model`` is the provider's own model id (without the ``provider:`` prefix); ``tool_choice``
    is ``"auto"``, ``"none"``, ``"required"`` or a tool name.
    """

    model: str
    messages: list[Message]
    tools: list[ToolSpec] = msgspec.field(default_factory=list)
    tool_choice: str | None = None
    system: str | None = None
    options: GenerationOptions = msgspec.field(default_factory=GenerationOptions)
    stream: bool = False


class Usage(msgspec.Struct, frozen=True):
    """Token counts of one call (or a run's sum: ``+`` adds them)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )


class ModelReply(msgspec.Struct, frozen=True):
    """A provider's answer in canonical form."""

    parts: list[MessagePart] = msgspec.field(default_factory=list)
    usage: Usage = msgspec.field(default_factory=Usage)
    finish_reason: str | None = None
    response_id: str | None = None
    model: str | None = None

    @property
    def text(self) -> str:
        """The concatenated text parts."""
        return "".join(p.text for p in self.parts if isinstance(p, Text))

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls the model made, in order."""
        return [p for p in self.parts if isinstance(p, ToolCall)]

    def as_message(self) -> Message:
        """The reply as the assistant message to append to the history."""
        return Message("assistant", list(self.parts))


# --- streaming deltas ---------------------------------------------------------------------------


class TextDelta(msgspec.Struct, frozen=True, tag="text_delta"):
    """A fragment of answer text."""

    text: str


class ReasoningDelta(msgspec.Struct, frozen=True, tag="reasoning_delta"):
    """A fragment of reasoning text, or the signature that closes a reasoning block.

    ``data`` and ``id`` carry what ``Reasoning.data`` / ``Reasoning.id`` hold for replay when the
    stream reports them (Anthropic redacted thinking, OpenAI encrypted reasoning and item id).
    """

    text: str = ""
    signature: str | None = None
    data: str | None = None
    id: str | None = None


class ToolCallStart(msgspec.Struct, frozen=True, tag="tool_call_start"):
    """A tool call begins; ``index`` ties later fragments to it."""

    index: int
    id: str
    name: str
    signature: str | None = None


class ToolCallDelta(msgspec.Struct, frozen=True, tag="tool_call_delta"):
    """A fragment of a tool call's JSON arguments."""

    index: int
    fragment: str


class ToolCallEnd(msgspec.Struct, frozen=True, tag="tool_call_end"):
    """A tool call's arguments are complete."""

    index: int


class UsageDelta(msgspec.Struct, frozen=True, tag="usage_delta"):
    """Token usage reported by the stream (often only at its end)."""

    usage: Usage


class FinishDelta(msgspec.Struct, frozen=True, tag="finish_delta"):
    """The stream's final event: why the model stopped, and the response's id and model."""

    reason: str | None = None
    response_id: str | None = None
    model: str | None = None


StreamDelta: TypeAlias = (
    TextDelta | ReasoningDelta | ToolCallStart | ToolCallDelta | ToolCallEnd | UsageDelta
    | FinishDelta
)
"""One incremental piece of a streamed reply."""
