"""Cross-provider rehost paths against the file-API emulators."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plait import (
    ContentHandle,
    ContentKind,
    ContentNotFound,
    ContentRejected,
    Document,
    Image,
    InlineSource,
    LocalPathSource,
    Message,
    ProviderFileSource,
    ToolResult,
    UrlSource,
    Video,
)
from plait._progress import TransferProgress
from plait._rehost import MediaMove, Rehoster
from plait.providers import capabilities_for
from plait.stores import AnthropicFilesStore, GeminiFilesStore, OpenAIFilesStore
from plait.testing import (
    AnthropicFilesEmulator,
    GeminiFilesEmulator,
    LoopbackServer,
    OpenAIFilesEmulator,
    Request,
    Response,
)

IMAGE, DOCUMENT, VIDEO = ContentKind.IMAGE, ContentKind.DOCUMENT, ContentKind.VIDEO
MB = 1024 * 1024


ANTHROPIC = capabilities_for("anthropic", "claude-sonnet-4-5").with_(
    max_item_bytes={IMAGE: 1 * MB, DOCUMENT: 24 * MB})
NO_URLS = ANTHROPIC.with_(url_kinds=frozenset())
GEMINI = capabilities_for("gemini", "gemini-3-pro-preview").with_(
    max_item_bytes={VIDEO: 1 * MB}, url_kinds=frozenset())


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def emus() -> Iterator[tuple[OpenAIFilesEmulator, AnthropicFilesEmulator, GeminiFilesEmulator,
                             Clock]]:
    clock = Clock()
    with (OpenAIFilesEmulator() as oa, AnthropicFilesEmulator() as an,
          GeminiFilesEmulator(clock=clock) as ge):
        yield oa, an, ge, clock


def stores(emus: tuple[OpenAIFilesEmulator, AnthropicFilesEmulator, GeminiFilesEmulator,
                       Clock]) -> tuple[OpenAIFilesStore, AnthropicFilesStore, GeminiFilesStore]:
    oa, an, ge, clock = emus
    return (OpenAIFilesStore(api_key=oa.api_key, base_url=oa.url),
            AnthropicFilesStore(api_key=an.api_key, base_url=an.url),
            GeminiFilesStore(api_key=ge.api_key, base_url=ge.url, clock=clock,
                             poll_interval=0.005))


def first_media(messages: list[Message]) -> Image | Document | Video:
    part = messages[0].parts[0]
    if isinstance(part, ToolResult):
        part = part.output[0]
    assert isinstance(part, Image | Document | Video)
    return part


async def test_openai_file_is_streamed_into_anthropic_once(emus) -> None:  # type: ignore[no-untyped-def]
    openai, anthropic, gemini = stores(emus)
    oa_emu, an_emu = emus[0], emus[1]
    data = os.urandom(3 * MB)
    uploaded = await openai.put(data, mime_type="image/png")
    file = openai.file_for(uploaded)
    assert file is not None
    remote = await openai.attach(file.file_id, mime_type="image/png")  # no origin: download
    progress: list[TransferProgress] = []
    moves: list[MediaMove] = []
    rehoster = Rehoster([], {"openai": openai, "anthropic": anthropic},
                        on_progress=progress.append)
    conversation = [Message("tool", [ToolResult("call_1", "frames",
                                                [Image.from_handle(remote)])])]
    out = await rehoster.rehost(conversation, NO_URLS, on_move=moves.append)
    source = first_media(out).source
    assert isinstance(source, ProviderFileSource) and source.provider == "anthropic"
    assert an_emu.blob_bytes(source.file_id) == data
    assert moves[0].action == "uploaded" and moves[0].origin == "openai"
    assert progress[-1].finished and progress[-1].done == len(data)
    again = await rehoster.rehost(conversation, NO_URLS)
    assert first_media(again).source == source
    assert an_emu.upload_count == 1
    downloads = [p for m, p, _ in oa_emu.requests if p.endswith("/content")]
    assert len(downloads) == 1
    for store in (openai, anthropic, gemini):
        await store.aclose()


async def test_small_foreign_file_is_inlined(emus) -> None:  # type: ignore[no-untyped-def]
    openai, anthropic, gemini = stores(emus)
    data = os.urandom(50_000)
    handle = await openai.put(data, mime_type="image/webp")
    rehoster = Rehoster([openai], {"openai": openai, "anthropic": anthropic})
    out = await rehoster.rehost([Message.user(Image.from_handle(handle))], NO_URLS)
    source = first_media(out).source
    assert isinstance(source, InlineSource) and source.data == data
    assert source.mime_type == "image/webp"
    assert emus[1].upload_count == 0
    for store in (openai, anthropic, gemini):
        await store.aclose()


async def test_expired_gemini_file_is_uploaded_again(emus) -> None:  # type: ignore[no-untyped-def]
    openai, anthropic, gemini = stores(emus)
    ge_emu, clock = emus[2], emus[3]
    video = os.urandom(2 * MB)
    handle = await gemini.put(video, mime_type="video/mp4")
    rehoster = Rehoster([gemini], {"gemini": gemini})
    message = [Message.user(Video.from_handle(handle))]
    first = first_media(await rehoster.rehost(message, GEMINI)).source
    assert isinstance(first, ProviderFileSource) and first.uri
    clock.now += 49 * 3600
    second = first_media(await rehoster.rehost(message, GEMINI)).source
    assert isinstance(second, ProviderFileSource)
    assert second.file_id != first.file_id
    assert ge_emu.upload_count == 2
    assert ge_emu.blob_bytes(second.file_id.removeprefix("files/")) == video
    for store in (openai, anthropic, gemini):
        await store.aclose()


async def test_local_30_mib_pdf_goes_to_anthropic_files(emus, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    openai, anthropic, gemini = stores(emus)
    path = tmp_path / "manual.pdf"
    with open(path, "wb") as fh:
        for _ in range(30):
            fh.write(os.urandom(MB))
    part = Document.from_path(path)
    rehoster = Rehoster([], {"anthropic": anthropic})
    moves: list[MediaMove] = []
    out = await rehoster.rehost([Message.user("read this", part)], NO_URLS,
                                on_move=moves.append)
    source = out[0].parts[1].source  # type: ignore[union-attr]
    assert isinstance(source, ProviderFileSource) and source.provider == "anthropic"
    assert emus[1].files[source.file_id]["size_bytes"] == 30 * MB
    assert emus[1].files[source.file_id]["filename"] == "manual.pdf"
    assert moves[0].action == "uploaded" and moves[0].origin == "local file"
    # A small local file stays a local path: the serializer inlines it from disk.
    small = tmp_path / "note.pdf"
    small.write_bytes(b"%PDF-1.4 tiny")
    kept = await rehoster.rehost([Message.user(Document.from_path(small))], NO_URLS)
    assert isinstance(first_media(kept).source, LocalPathSource)
    for store in (openai, anthropic, gemini):
        await store.aclose()


async def test_too_big_without_a_file_store_is_rejected_before_any_request(
        emus, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rehoster = Rehoster([], {})
    with pytest.raises(ContentRejected) as info:
        await rehoster.rehost([Message.user(Image.from_bytes(b"x" * (2 * MB), "image/png"))],
                              NO_URLS)
    assert info.value.provider == "anthropic" and "inline" in (info.value.limit or "")
    assert emus[1].requests == []


def _media_app(request: Request) -> Response:
    size = int(request.query_value("size") or "100")
    return Response(200, b"m" * size, headers={"content-type": "image/png"})


async def test_urls_pass_through_fetch_inline_or_upload(emus) -> None:  # type: ignore[no-untyped-def]
    openai, anthropic, gemini = stores(emus)
    with LoopbackServer(_media_app) as media:
        small = Image.from_url(f"{media.url}/a.png?size=1000", "image/png")
        big = Image.from_url(f"{media.url}/b.png?size={2 * MB}", "image/png")
        fetches = ANTHROPIC.with_(url_kinds=frozenset({IMAGE}), max_item_bytes={IMAGE: MB})
        kept = await Rehoster([], {}).rehost([Message.user(small)], fetches)
        assert first_media(kept).source == small.source
        inlined = await Rehoster([], {}).rehost([Message.user(small)], NO_URLS)
        source = first_media(inlined).source
        assert isinstance(source, InlineSource) and source.data == b"m" * 1000
        with pytest.raises(ContentRejected):
            await Rehoster([], {}).rehost([Message.user(big)], NO_URLS)
        uploaded = await Rehoster([], {"anthropic": anthropic}).rehost(
            [Message.user(big)], NO_URLS)
        source = first_media(uploaded).source
        assert isinstance(source, ProviderFileSource)
        assert emus[1].blob_bytes(source.file_id) == b"m" * (2 * MB)
    for store in (openai, anthropic, gemini):
        await store.aclose()


async def test_kinds_the_destination_cannot_take_are_left_for_the_serializer() -> None:
    video = Video.from_url("https://example.invalid/v.mp4", "video/mp4")
    moves: list[MediaMove] = []
    out = await Rehoster([], {}).rehost([Message.user(video)], NO_URLS, on_move=moves.append)
    assert first_media(out) is video
    assert moves[0].action == "skipped"


async def test_unknown_handle_is_content_not_found() -> None:
    ghost = ContentHandle("h_" + "a" * 26, ContentKind.IMAGE, "image/png", 10)
    with pytest.raises(ContentNotFound):
        await Rehoster([], {}).rehost([Message.user(Image.from_handle(ghost))], NO_URLS)


async def test_foreign_file_without_its_store_is_rejected() -> None:
    part = Image(source=ProviderFileSource("openai", "file-abc", "image/png"))
    with pytest.raises(ContentRejected, match="no openai file store"):
        await Rehoster([], {}).rehost([Message.user(part)], NO_URLS)
    own = Image(source=ProviderFileSource("anthropic", "file_011x", "image/png"))
    out = await Rehoster([], {}).rehost([Message.user(own)], NO_URLS)
    assert first_media(out) is own
    assert isinstance(UrlSource("x"), UrlSource)
