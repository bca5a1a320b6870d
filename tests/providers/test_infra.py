"""Shared provider infrastructure: capabilities, pairing, placement, preflight, body encoding,
delta accumulation."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from plait import (
    Audio,
    ContentHandle,
    ContentKind,
    ContentRejected,
    ConversationError,
    Document,
    FinishDelta,
    Image,
    Message,
    ModelRequest,
    ProviderFileSource,
    ProviderRaw,
    Reasoning,
    ReasoningDelta,
    Text,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
    Usage,
    UsageDelta,
    Video,
)
from plait._parts import MediaPart
from plait.providers import (
    Accumulator,
    Capabilities,
    CapabilityTable,
    EncodeCache,
    MediaEncoder,
    StreamedBody,
    encode_body,
    find_violations,
    pair_tool_results,
    place_media,
    preflight,
)
from plait.providers._capabilities import AUDIO, DOCUMENT, IMAGE

CHAT = Capabilities(provider="chat", user_kinds=frozenset({IMAGE, DOCUMENT}),
                    mime_types={IMAGE: frozenset({"image/png", "image/jpeg"})},
                    max_item_bytes={IMAGE: 100}, max_items_per_kind={IMAGE: 3}, max_items=4,
                    max_request_bytes=1000, url_kinds=frozenset({IMAGE}),
                    file_provider="chat", file_id_kinds=frozenset({DOCUMENT}))
NATIVE = CHAT.with_(provider="native", tool_result_kinds=frozenset({IMAGE}))


def img(n: int = 10, mime: str = "image/png", name: str | None = None) -> Image:
    return Image.from_bytes(bytes([n % 256]) * n, mime, name=name)


# --- capabilities ----------------------------------------------------------------------------


def test_placement_and_mime_rules() -> None:
    assert [CHAT.placement(k) for k in (IMAGE, DOCUMENT, AUDIO)] == [
        "user", "user", "unsupported"]
    assert NATIVE.placement(IMAGE) == "tool_result"
    narrow = NATIVE.with_(tool_result_mime_types={IMAGE: frozenset({"image/png"})})
    assert narrow.placement(IMAGE, "image/png") == "tool_result"
    assert narrow.placement(IMAGE, "image/jpeg") == "user"  # moves to the follow-up instead
    assert narrow.placement(IMAGE) == "user"
    assert CHAT.mime_allowed(IMAGE, "IMAGE/PNG; charset=binary")
    assert not CHAT.mime_allowed(IMAGE, "image/gif") and not CHAT.mime_allowed(IMAGE, None)
    assert CHAT.mime_allowed(DOCUMENT, None)  # no allowlist for documents
    assert CHAT.takes_file_id(DOCUMENT, "chat") and not CHAT.takes_file_id(DOCUMENT, "other")


def test_table_first_match_wins_case_insensitively() -> None:
    a, b, default = (CHAT.with_(family=f) for f in ("a", "b", "default"))
    table = CapabilityTable("chat", [("gpt-4o-mini*", a), ("GPT-4o*", b)], default)
    assert table.lookup("gpt-4o-mini-2024").family == "a"
    assert table.lookup("gpt-4o").family == "b"
    assert table.lookup("o3").family == "default"


# --- pairing ---------------------------------------------------------------------------------


def test_pairing_reorders_and_splits_batches() -> None:
    calls = [ToolCall(f"c{i}", "t") for i in range(3)]
    out = pair_tool_results([
        Message.assistant(*calls),
        Message("tool", [ToolResult("c2", "t"), ToolResult("c0", "t")]),
        Message("tool", [ToolResult("c1", "t")]),
        Message.user("next"),
    ])
    assert [m.role for m in out] == ["assistant", "tool", "tool", "tool", "user"]
    assert [m.parts[0].call_id for m in out[1:4]] == ["c0", "c1", "c2"]  # type: ignore[union-attr]


@pytest.mark.parametrize(("messages", "match"), [
    ([Message.assistant(ToolCall("a", "t"))], "have no result"),
    ([Message.assistant(ToolCall("a", "t")), Message("tool", [ToolResult("b", "t")])],
     "have no result"),
    ([Message.assistant(ToolCall("a", "t")),
      Message("tool", [ToolResult("a", "t"), ToolResult("b", "t")])], "answer no call"),
    ([Message.assistant(ToolCall("a", "t"), ToolCall("a", "t")),
      Message("tool", [ToolResult("a", "t")])], "duplicate tool call ids"),
    ([Message.assistant(ToolCall("a", "t")), Message("tool", [Text("x")])], "only hold"),
    ([Message.user("x"), Message("tool", [ToolResult("a", "t")])], "without a preceding"),
])
def test_pairing_errors(messages: list[Message], match: str) -> None:
    with pytest.raises(ConversationError, match=match):
        pair_tool_results(messages)


# --- placement -------------------------------------------------------------------------------


def _batch(*results: ToolResult) -> list[Message]:
    calls = [ToolCall(r.call_id, r.name) for r in results]
    return pair_tool_results([Message.user("go"), Message.assistant(*calls),
                              *(Message("tool", [r]) for r in results)])


def test_one_follow_up_after_the_whole_batch_with_bridge() -> None:
    placed = place_media(_batch(ToolResult("a", "t", [img(1)]),
                                ToolResult("b", "t", [Text("x"), img(2)])), CHAT,
                         bridge=Message.assistant("OK"))
    assert [m.role for m in placed] == ["user", "assistant", "tool", "tool", "assistant",
                                        "user"]
    follow = placed[-1].parts
    assert [type(p).__name__ for p in follow] == ["Text", "Image", "Text", "Image"]
    assert follow[0] == Text("[tool call a item 1: image, image/png]")
    assert follow[2] == Text("[tool call b item 2: image, image/png]")
    tool_b = placed[3].parts[0]
    assert isinstance(tool_b, ToolResult)
    assert tool_b.output[0] == Text("x")
    assert "labelled tool call b item 2" in tool_b.output[1].text  # type: ignore[union-attr]


def test_native_kinds_stay_inside_and_others_still_move_or_become_notes() -> None:
    handle = ContentHandle("h_" + "b" * 26, ContentKind.AUDIO, "audio/wav", 4, "memo.wav")
    audio = Audio(source=None, handle=handle, mime_type="audio/wav", name="memo.wav")
    with capture_logs() as logs:
        placed = place_media(_batch(ToolResult("a", "t", [img(1), Document.from_bytes(
            b"%PDF", "application/pdf"), audio])), NATIVE)
    result = placed[2].parts[0]
    assert isinstance(result, ToolResult)
    assert isinstance(result.output[0], Image)
    assert "[audio omitted: native (*) does not accept audio content; name=memo.wav, " \
           f"handle={handle.id}, mime=audio/wav, size=4 bytes]" == result.output[2].text  # type: ignore[union-attr]
    assert isinstance(placed[3].parts[1], Document)
    assert logs[0]["event"] == "media_not_supported" and logs[0]["handle"] == handle.id


def test_user_media_of_unsupported_kinds_become_notes() -> None:
    placed = place_media([Message.user("x", Video.from_url("https://e.test/v.mp4"), img())],
                         CHAT)
    assert isinstance(placed[0].parts[2], Image)
    assert placed[0].parts[1].text.startswith("[video omitted")  # type: ignore[union-attr]


def test_placement_shares_parts_and_leaves_text_conversations_alone() -> None:
    convo = [Message.user("hi"), Message.assistant("hello")]
    assert place_media(convo, CHAT)[0] is convo[0]
    image = img(5)
    placed = place_media(_batch(ToolResult("a", "t", [image])), CHAT)
    assert placed[-1].parts[1] is image  # moved, not copied


KINDS = st.sampled_from([lambda: img(3), lambda: Audio.from_bytes(b"a", "audio/wav"),
                         lambda: Video.from_bytes(b"v", "video/mp4"),
                         lambda: Document.from_bytes(b"d", "application/pdf"),
                         lambda: Text("t")])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(KINDS, max_size=4), min_size=1, max_size=4),
       st.sampled_from([CHAT, NATIVE]))
def test_every_media_item_is_accounted_for(outputs: list[list[object]],
                                           caps: Capabilities) -> None:
    results = [ToolResult(f"c{i}", "t", [make() for make in out])  # type: ignore[operator]
               for i, out in enumerate(outputs)]
    placed = place_media(_batch(*results), caps)
    media_in = sum(isinstance(p, MediaPart) for r in results for p in r.output)
    kept = sum(isinstance(p, MediaPart) for m in placed for part in m.parts
               for p in (part.output if isinstance(part, ToolResult) else [part]))
    notes = sum(isinstance(p, Text) and "omitted:" in p.text for m in placed
                for part in m.parts
                for p in (part.output if isinstance(part, ToolResult) else [part]))
    assert kept + notes == media_in
    follow_ups = [m for m in placed if m.role == "user"][1:]
    assert len(follow_ups) <= 1  # one follow-up for the whole batch, never one per result
    # tool results still come first, one per call, in call order
    assert [m.role for m in placed[2:2 + len(results)]] == ["tool"] * len(results)


# --- preflight -------------------------------------------------------------------------------


def test_violations_name_part_limit_and_provider() -> None:
    messages = [Message.user("x", img(200, name="big.png"), img(10, "image/gif"),
                             Image.from_handle(ContentHandle("h_" + "c" * 26, "image")))]
    violations = find_violations(messages, CHAT)
    assert [v.limit for v in violations] == ["100 bytes per image item",
                                             "image MIME types: image/jpeg, image/png",
                                             "resolved source"]
    assert violations[0].where == "messages[0].parts[1] (image 'big.png')"
    error = violations[0].error("chat")
    assert (error.provider, error.part, error.limit) == ("chat", violations[0].where,
                                                         "100 bytes per image item")


def test_counts_totals_sources() -> None:
    many = [Message.user(*[img(10) for _ in range(5)])]
    assert [v.limit for v in find_violations(many, CHAT)] == ["3 image items per request",
                                                             "4 media items per request"]
    total = [Message.user(*[img(90) for _ in range(3)], "x" * 700)]
    assert [v.limit for v in find_violations(total, CHAT)] == ["1000 bytes per request"]
    foreign = Document(source=ProviderFileSource("other", "f1"), mime_type="application/pdf")
    url_doc = Document.from_url("https://e.test/a.pdf", "application/pdf")
    assert [v.limit for v in find_violations([Message.user(foreign, url_doc)], CHAT)] == [
        "file ids of chat", "URL fetching"]
    in_tool = _batch(ToolResult("a", "t", [img(200)]))
    (violation,) = find_violations(in_tool, CHAT)
    assert violation.where.startswith("messages[2].parts[0].output[0] (tool call a)")


async def test_preflight_raises_or_uploads() -> None:
    request = ModelRequest(model="m", messages=[Message.user("x", img(200), img(20))])
    expected = re.escape("chat: messages[0].parts[1] (image): 200 bytes")
    with pytest.raises(ContentRejected, match=expected):
        await preflight(request, CHAT)

    class Store:
        def __init__(self) -> None:
            self.uploaded: list[int] = []

        def accepts(self, part: MediaPart) -> bool:
            return True

        async def upload(self, part: MediaPart) -> ProviderFileSource:
            self.uploaded.append(part.byte_size or 0)
            return ProviderFileSource("chat", f"file-{len(self.uploaded)}", part.media_type)

    store = Store()
    fixed = await preflight(request, CHAT.with_(file_id_kinds=frozenset({IMAGE})),
                            uploader=store)
    assert store.uploaded == [200]
    parts = fixed.messages[0].parts
    assert parts[1].source == ProviderFileSource("chat", "file-1", "image/png")  # type: ignore[union-attr]
    assert parts[2] is request.messages[0].parts[2]
    # a MIME violation is not fixed by uploading: still refused
    with pytest.raises(ContentRejected, match="MIME"):
        await preflight(ModelRequest(model="m", messages=[Message.user(img(5, "image/bmp"))]),
                        CHAT, uploader=store)


async def test_preflight_uploads_largest_items_when_the_total_is_too_big() -> None:
    caps = CHAT.with_(max_item_bytes={}, file_id_kinds=frozenset({IMAGE}))
    request = ModelRequest(model="m", messages=[Message.user(img(300), img(600), img(30))])

    class Store:
        def accepts(self, part: MediaPart) -> bool:
            return True

        async def upload(self, part: MediaPart) -> ProviderFileSource:
            return ProviderFileSource("chat", f"file-{part.byte_size}")

    fixed = await preflight(request, caps, uploader=Store())
    sources = [p.source for p in fixed.messages[0].parts]  # type: ignore[union-attr]
    assert sources[1] == ProviderFileSource("chat", "file-600")
    assert isinstance(sources[0], type(request.messages[0].parts[0].source))  # type: ignore[union-attr]


def test_local_files_are_measured_without_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.png"
    path.write_bytes(b"\0" * 500)
    (violation,) = find_violations([Message.user(Image.from_path(path))], CHAT)
    assert "500 bytes exceed" in violation.message


# --- body encoding ---------------------------------------------------------------------------


def test_encode_cache_encodes_each_item_once() -> None:
    cache = EncodeCache()
    encoder = MediaEncoder(cache)
    data = b"\x01\x02\x03" * 100
    part = Image.from_bytes(data, "image/png")
    first = encoder.data_url(part)
    assert encoder.data_url(Image.from_bytes(data, "image/png")) is first  # same bytes object
    assert encoder.base64(part) == base64.b64encode(data).decode()  # other wire encoding
    assert (cache.hits, cache.misses) == (1, 2)
    handle = ContentHandle("h_" + "d" * 26, "image", "image/png")
    first_fetch = Image(source=Image.from_bytes(bytearray(data), "image/png").source,
                        handle=handle)
    second_fetch = Image(source=Image.from_bytes(bytearray(data), "image/png").source,
                         handle=handle)
    assert first_fetch.source.data is not second_fetch.source.data  # type: ignore[union-attr]
    assert encoder.base64(first_fetch) == encoder.base64(second_fetch)
    assert (cache.hits, cache.misses) == (2, 3)  # the handle is the identity across fetches


def test_encode_cache_is_bounded() -> None:
    cache = EncodeCache(max_bytes=100)
    encoder = MediaEncoder(cache)
    parts = [Image.from_bytes(bytes([i]) * 30, "image/png") for i in range(5)]
    for part in parts:
        encoder.base64(part)
    assert len(cache) == 2  # 40 chars each, at most 100 kept


@pytest.mark.parametrize("size", [0, 1, 2, 3, 4, 393215, 393216, 393217, 1_000_001])
async def test_streamed_body_equals_the_plain_encoding(size: int, tmp_path: Path) -> None:
    data = bytes((i * 7) % 256 for i in range(size))
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    for part in (Image.from_bytes(data, "image/png"), Image.from_path(path, "image/png")):
        wire = {"a": "x\u00e9\"", "items": [{"url": MediaEncoder(
            stream_threshold=0).data_url(part)}, {"b64": MediaEncoder(
                stream_threshold=0).base64(part)}], "n": 1}
        body = encode_body(wire)
        assert isinstance(body, StreamedBody)
        joined = await body.read()
        assert body.content_length == len(joined)
        assert await body.read() == joined  # re-iterable for retries
        expected = {"a": "x\u00e9\"", "items": [
            {"url": "data:image/png;base64," + base64.b64encode(data).decode()},
            {"b64": base64.b64encode(data).decode()}], "n": 1}
        assert json.loads(joined) == expected
        assert joined == msgspec.json.encode(expected)


def test_small_bodies_are_plain_bytes_and_unknown_objects_fail() -> None:
    assert encode_body({"a": [1, "b"]}) == b'{"a":[1,"b"]}'
    with pytest.raises(TypeError, match="cannot encode object"):
        encode_body({"a": object()})


def test_encoder_rejects_sources_without_bytes(tmp_path: Path) -> None:
    with pytest.raises(ContentRejected, match="no inline bytes"):
        MediaEncoder().base64(Image.from_url("https://e.test/a.png"))
    with pytest.raises(ContentRejected, match="cannot read local file"):
        MediaEncoder().base64(Image.from_path(tmp_path / "missing.png"))


# --- accumulation ----------------------------------------------------------------------------


def test_accumulator_keeps_block_order_signatures_and_max_usage() -> None:
    acc = Accumulator(provider="anthropic")
    for delta in [
        UsageDelta(Usage(input_tokens=10, output_tokens=1)),
        ReasoningDelta("let me "), ReasoningDelta("think"), ReasoningDelta(signature="sig"),
        TextDelta("Hi "), TextDelta("there"),
        ToolCallStart(0, "t1", "f", signature="ts"), ToolCallDelta(0, '{"a"'),
        ToolCallStart(1, "t2", "g"), ToolCallDelta(0, ":1}"), ToolCallEnd(0), ToolCallEnd(1),
        UsageDelta(Usage(output_tokens=25)),
        FinishDelta("tool_calls", "r1", "m"),
    ]:
        acc.add(delta)
    reply = acc.reply()
    assert reply.parts == [Reasoning("let me think", provider="anthropic", signature="sig"),
                           Text("Hi there"), ToolCall("t1", "f", '{"a":1}', "ts"),
                           ToolCall("t2", "g", "{}")]
    assert reply.usage == Usage(10, 25)
    assert (reply.finish_reason, reply.response_id, reply.model) == ("tool_calls", "r1", "m")
    with pytest.raises(TypeError):
        acc.add(Text("not a delta"))  # type: ignore[arg-type]


def test_accumulator_keeps_redacted_and_encrypted_reasoning_for_replay() -> None:
    acc = Accumulator(provider="openai-responses")
    for delta in [
        ReasoningDelta("summary "), ReasoningDelta("text"),
        ReasoningDelta(id="rs_1", data="ENCRYPTED"),       # closes the open item
        ReasoningDelta(data="REDACTED"),                    # a block of its own
        TextDelta("answer"),
    ]:
        acc.add(delta)
    assert acc.reply().parts == [
        Reasoning("summary text", provider="openai-responses", data="ENCRYPTED", id="rs_1"),
        Reasoning("", provider="openai-responses", data="REDACTED"),
        Text("answer"),
    ]


def test_raw_tool_output_is_used_verbatim_for_its_provider() -> None:
    from plait.providers import openai_chat

    call = ToolCall("c", "t")
    raw = ToolResult("c", "t", [Text("default")], raw=ProviderRaw("openai", [
        {"type": "text", "text": "raw"}]))
    body = openai_chat.build_request(ModelRequest(model="gpt-4.1", messages=[
        Message.assistant(call), Message("tool", [raw])]))
    assert body["messages"][1]["content"] == [{"type": "text", "text": "raw"}]
