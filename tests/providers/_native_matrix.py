"""Canonical conversations every native-media provider test serializes (Anthropic, OpenAI
Responses, Gemini, Bedrock): text, tool calls, tool results with every media kind, mixed parts,
inline / URL / provider-file sources, long histories."""

from __future__ import annotations

from plait import (
    Audio,
    ContentHandle,
    ContentKind,
    Document,
    Image,
    Message,
    ProviderFileSource,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    Video,
)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
JPEG = b"\xff\xd8\xff\xe0" + bytes(range(200))
PDF = b"%PDF-1.4\n" + b"1 0 obj << >> endobj\n" * 20 + b"%%EOF\n"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(64)
MP4 = b"\x00\x00\x00\x18ftypmp42" + bytes(128)
CSV = b"a,b\n1,2\n"

HANDLE = ContentHandle("h_" + "a" * 26, ContentKind.IMAGE, "image/png", len(PNG), "chart.png")


def image() -> Image:
    return Image.from_bytes(PNG, "image/png", name="chart.png")


def pdf() -> Document:
    return Document.from_bytes(PDF, "application/pdf", name="report.pdf")


def audio() -> Audio:
    return Audio.from_bytes(WAV, "audio/wav", name="memo.wav")


def video() -> Video:
    return Video.from_bytes(MP4, "video/mp4", name="clip.mp4")


def _call(i: int, name: str = "get_file", args: str = '{"path": "x"}') -> ToolCall:
    return ToolCall(f"call_{i:03d}", name, args)


def _turn(output: list[Text | Image | Audio | Video | Document],
          *, is_error: bool = False) -> list[Message]:
    call = _call(1)
    return [
        Message.user("fetch the file"),
        Message.assistant("Fetching.", call),
        Message("tool", [ToolResult(call.id, call.name, output, is_error=is_error)]),
    ]


def conversations(file_source: ProviderFileSource | None = None) -> dict[str, list[Message]]:
    """name -> conversation; ``file_source`` adds provider-file cases for that provider."""
    several = [_call(i, f"tool_{i}") for i in range(3)]
    convos: dict[str, list[Message]] = {
        "text": [Message.user("Hello there")],
        "one_tool_call": _turn([Text("42 rows")]),
        "tool_error": _turn([Text("file not found")], is_error=True),
        "empty_tool_result": _turn([]),
        "several_tool_calls": [
            Message.user("run all three"),
            Message.assistant(*several),
            # answered out of order and across two tool messages: serializers must reorder
            Message("tool", [ToolResult(several[2].id, several[2].name, [Text("two")])]),
            Message("tool", [ToolResult(several[0].id, several[0].name, [Text("zero")]),
                             ToolResult(several[1].id, several[1].name, [image()])]),
            Message.user("and now summarise"),
        ],
        "tool_image": _turn([image()]),
        "tool_pdf": _turn([pdf()]),
        "tool_audio": _turn([audio()]),
        "tool_video": _turn([video()]),
        "tool_mixed": _turn([Text("before"), image(), Text("between"), pdf(), Text("after")]),
        "tool_all_kinds": _turn([Text("all"), image(), pdf(), audio(), video()]),
        "user_media": [Message.user("look", image(), pdf(), audio(), video(), "thanks")],
        "user_mixed": [Message.user(Text("a"), image(), Text("b"))],
        "url_image": [Message.user("see", Image.from_url("https://example.test/a.png",
                                                         "image/png"))],
        "system_and_options": [Message("system", [Text("Be terse.")]), Message.user("hi")],
        "long_history": _long_history(25),
    }
    if file_source is not None:
        img = Image(source=file_source, mime_type="image/png", name="remote.png")
        doc = Document(source=ProviderFileSource(file_source.provider, file_source.file_id + "d",
                                                 "application/pdf",
                                                 uri=(file_source.uri + "d"
                                                      if file_source.uri else None)),
                       mime_type="application/pdf", name="remote.pdf")
        convos["file_ids_user"] = [Message.user("look", img, doc)]
        convos["file_ids_tool"] = _turn([Text("files"), img, doc])
    return convos


def _long_history(turns: int) -> list[Message]:
    messages = [Message.user("start")]
    for i in range(turns):
        call = _call(i, "step")
        messages.append(Message.assistant(f"step {i}", call))
        output: list[Text | Image | Audio | Video | Document] = [Text(f"result {i}")]
        if i % 5 == 0:
            output.append(image())
        messages.append(Message("tool", [ToolResult(call.id, call.name, output)]))
    messages.append(Message.assistant("done"))
    messages.append(Message.user("thanks"))
    return messages


def reasoning_turn(reasoning: Reasoning, signature: str | None = None) -> list[Message]:
    """A turn whose assistant message carries ``reasoning`` before its tool call."""
    call = ToolCall("call_r1", "lookup", '{"q": 1}', signature=signature)
    return [
        Message.user("think then call"),
        Message("assistant", [reasoning, call]),
        Message("tool", [ToolResult(call.id, call.name, [Text("ok")])]),
    ]
