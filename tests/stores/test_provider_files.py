"""Provider file stores against the loopback emulators of their real upload protocols."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest

from plait import (
    AuthenticationError,
    ContentKind,
    ContentNotFound,
    ContentRejected,
    ProviderError,
    ProviderFileSource,
    UrlSource,
)
from plait.stores import AnthropicFilesStore, FalStore, GeminiFilesStore, OpenAIFilesStore
from plait.testing import (
    AnthropicFilesEmulator,
    FalStorageEmulator,
    GeminiFilesEmulator,
    OpenAIFilesEmulator,
)


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


async def chunks_of(data: bytes, size: int = 100_000) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


@pytest.fixture
def openai_emu() -> Iterator[OpenAIFilesEmulator]:
    with OpenAIFilesEmulator() as emu:
        yield emu


@pytest.fixture
def anthropic_emu() -> Iterator[AnthropicFilesEmulator]:
    with AnthropicFilesEmulator() as emu:
        yield emu


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gemini_emu(clock: Clock) -> Iterator[GeminiFilesEmulator]:
    with GeminiFilesEmulator(clock=clock) as emu:
        yield emu


DATA = os.urandom(700_000)


async def test_openai_upload_resolve_download_delete(openai_emu: OpenAIFilesEmulator) -> None:
    async with OpenAIFilesStore(api_key=openai_emu.api_key, base_url=openai_emu.url) as store:
        handle = await store.put(DATA, mime_type="application/pdf", display_name="report.pdf")
        assert handle.kind is ContentKind.DOCUMENT and handle.byte_size == len(DATA)
        source = await store.resolve(handle, for_provider="openai")
        assert isinstance(source, ProviderFileSource) and source.provider == "openai"
        stored = openai_emu.files[source.file_id]
        assert stored["purpose"] == "user_data" and stored["filename"] == "report.pdf"
        assert openai_emu.blob_bytes(source.file_id) == DATA
        # A file uploaded elsewhere: no origin, so the bytes come back through the API.
        attached = await store.attach(source.file_id, mime_type="application/pdf")
        assert attached.byte_size == len(DATA)
        assert await store.fetch_bytes(attached) == DATA
        await store.delete(handle)
        assert openai_emu.deleted == [source.file_id]
        with pytest.raises(ContentNotFound):
            await store.resolve(handle)


async def test_streamed_upload_of_unknown_size(openai_emu: OpenAIFilesEmulator) -> None:
    async with OpenAIFilesStore(api_key=openai_emu.api_key, base_url=openai_emu.url) as store:
        handle = await store.put(chunks_of(DATA), mime_type="image/png")
        assert handle.byte_size == len(DATA) and handle.kind is ContentKind.IMAGE
        source = await store.resolve(handle)
        assert isinstance(source, ProviderFileSource)
        assert openai_emu.blob_bytes(source.file_id) == DATA
        # The stream is gone but OpenAI can return the bytes.
        assert await store.fetch_bytes(handle) == DATA


async def test_5xx_mid_upload_is_retried_from_a_rereadable_source(
        openai_emu: OpenAIFilesEmulator) -> None:
    openai_emu.fail_upload_at = 300_000
    async with OpenAIFilesStore(api_key=openai_emu.api_key, base_url=openai_emu.url,
                                retry_backoff=0) as store:
        handle = await store.put(DATA, mime_type="application/pdf")
        source = await store.resolve(handle)
    assert isinstance(source, ProviderFileSource)
    assert list(openai_emu.files) == [source.file_id]
    assert openai_emu.blob_bytes(source.file_id) == DATA
    posts = [r for r in openai_emu.requests if r[0] == "POST"]
    assert len(posts) == 2


async def test_5xx_mid_upload_of_a_one_shot_stream_fails_cleanly(
        openai_emu: OpenAIFilesEmulator) -> None:
    openai_emu.fail_upload_at = 300_000
    async with OpenAIFilesStore(api_key=openai_emu.api_key, base_url=openai_emu.url,
                                retry_backoff=0) as store:
        with pytest.raises(ProviderError) as info:
            await store.put(chunks_of(DATA), mime_type="application/pdf")
        assert info.value.status == 500
        assert not store.holds("anything") and repr(store).endswith("files=0)")
    assert openai_emu.files == {}
    assert os.listdir(openai_emu._dir) == []


async def test_wrong_key_is_typed_and_never_echoed(openai_emu: OpenAIFilesEmulator) -> None:
    secret = "sk-live-very-secret-123"
    async with OpenAIFilesStore(api_key=secret, base_url=openai_emu.url) as store:
        with pytest.raises(AuthenticationError) as info:
            await store.put(b"x", mime_type="text/plain")
        assert secret not in str(info.value) and secret not in repr(store)
        assert info.value.status == 401


async def test_missing_key_is_an_authentication_error(
        openai_emu: OpenAIFilesEmulator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with OpenAIFilesStore(base_url=openai_emu.url) as store:
        with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
            await store.put(b"x", mime_type="text/plain")


async def test_anthropic_sends_beta_header_and_keeps_the_origin(
        anthropic_emu: AnthropicFilesEmulator, tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "deck.pdf")
    with open(path, "wb") as fh:
        fh.write(DATA)
    async with AnthropicFilesStore(api_key=anthropic_emu.api_key,
                                   base_url=anthropic_emu.url) as store:
        handle = await store.put(path)
        assert handle.mime_type == "application/pdf" and handle.display_name == "deck.pdf"
        source = await store.resolve(handle)
        assert isinstance(source, ProviderFileSource) and source.file_id.startswith("file_")
        assert anthropic_emu.files[source.file_id]["size_bytes"] == len(DATA)
        # Not downloadable from Anthropic: read back from the local file it came from.
        assert await store.fetch_bytes(handle) == DATA
        streamed = await store.put(chunks_of(b"abc" * 1000), mime_type="text/plain")
        with pytest.raises(ContentNotFound, match="no origin"):
            await store.fetch_bytes(streamed)
    assert all(h.get("anthropic-beta") == "files-api-2025-04-14"
               for _, _, h in anthropic_emu.requests)
    assert all(h.get("anthropic-version") for _, _, h in anthropic_emu.requests)


async def test_anthropic_size_limit_refused_before_any_request(
        anthropic_emu: AnthropicFilesEmulator) -> None:
    async with AnthropicFilesStore(api_key=anthropic_emu.api_key, base_url=anthropic_emu.url,
                                   max_file_bytes=1000) as store:
        with pytest.raises(ContentRejected):
            await store.put(b"x" * 1001, mime_type="application/pdf")
    assert anthropic_emu.requests == []


async def test_gemini_resumable_chunks_and_resume_after_5xx(
        gemini_emu: GeminiFilesEmulator, clock: Clock) -> None:
    gemini_emu.fail_upload_at = 400_000  # inside the second 256 KiB chunk
    gemini_emu.fail_status = 503
    async with GeminiFilesStore(api_key=gemini_emu.api_key, base_url=gemini_emu.url,
                                chunk_size=256 * 1024, retry_backoff=0, clock=clock) as store:
        handle = await store.put(chunks_of(DATA), mime_type="application/pdf")
        source = await store.resolve(handle)
    assert isinstance(source, ProviderFileSource)
    assert source.uri and source.uri.endswith(source.file_id.removeprefix("files"))
    assert source.expires_at == pytest.approx(clock.now + 48 * 3600, abs=2)
    file_id = source.file_id.removeprefix("files/")
    assert gemini_emu.blob_bytes(file_id) == DATA
    commands = [h.get("x-goog-upload-command") for _, _, h in gemini_emu.requests]
    assert commands[0] == "start" and "query" in commands
    assert commands[-1] == "upload, finalize"
    assert gemini_emu.upload_count == 1  # resumed, not restarted


async def test_gemini_video_waits_until_active(gemini_emu: GeminiFilesEmulator,
                                               clock: Clock) -> None:
    async with GeminiFilesStore(api_key=gemini_emu.api_key, base_url=gemini_emu.url,
                                poll_interval=0.005, clock=clock) as store:
        handle = await store.put(b"\x00" * 5000, mime_type="video/mp4")
        source = await store.resolve(handle)
    assert isinstance(source, ProviderFileSource)
    assert gemini_emu.files[source.file_id.removeprefix("files/")]["state"] == "ACTIVE"
    polls = [p for m, p, _ in gemini_emu.requests if m == "GET"]
    assert len(polls) == gemini_emu.processing_polls


async def test_gemini_expired_file_is_uploaded_again(gemini_emu: GeminiFilesEmulator,
                                                     clock: Clock) -> None:
    async with GeminiFilesStore(api_key=gemini_emu.api_key, base_url=gemini_emu.url,
                                clock=clock) as store:
        handle = await store.put(DATA, mime_type="audio/wav")
        first = await store.resolve(handle)
        assert await store.resolve(handle) == first  # still valid: no new upload
        clock.now += 49 * 3600
        assert not store.holds(handle)
        second = await store.resolve(handle)
    assert isinstance(first, ProviderFileSource) and isinstance(second, ProviderFileSource)
    assert second.file_id != first.file_id and second.expires_at > first.expires_at  # type: ignore[operator]
    assert gemini_emu.upload_count == 2
    assert gemini_emu.blob_bytes(second.file_id.removeprefix("files/")) == DATA


async def test_fal_token_then_upload_and_public_url() -> None:
    with FalStorageEmulator() as emu:
        async with FalStore(api_key=emu.api_key, base_url=emu.url) as store:
            handle = await store.put(chunks_of(DATA), mime_type="image/png",
                                     display_name="frame 1.png")
            own = await store.resolve(handle, for_provider="fal")
            other = await store.resolve(handle, for_provider="openai")
            assert isinstance(own, ProviderFileSource) and isinstance(other, UrlSource)
            assert other.url == own.uri and other.url.endswith("/frame_1.png")
            assert await store.fetch_bytes(handle) == DATA  # public URL download
            await store.put(b"again", mime_type="text/plain")
        paths = [(m, p) for m, p, _ in emu.requests]
        assert paths.count(("POST", "/storage/auth/token")) == 1  # token reused
        auth = [h["authorization"] for m, p, h in emu.requests if p == "/files/upload"]
        assert all(a.startswith("Bearer ") for a in auth)


async def test_copy_between_providers_streams_once(
        openai_emu: OpenAIFilesEmulator, anthropic_emu: AnthropicFilesEmulator) -> None:
    async with (
        OpenAIFilesStore(api_key=openai_emu.api_key, base_url=openai_emu.url) as src,
        AnthropicFilesStore(api_key=anthropic_emu.api_key, base_url=anthropic_emu.url) as dst,
    ):
        uploaded = await src.put(DATA, mime_type="application/pdf")
        origin_file = src.file_for(uploaded)
        assert origin_file is not None
        remote = await src.attach(origin_file.file_id, mime_type="application/pdf")
        copied = await dst.copy_from(src, remote)
        again = await dst.copy_from(src, remote)
        assert copied == again and anthropic_emu.upload_count == 1
        assert anthropic_emu.blob_bytes(copied.file_id) == DATA
        assert (await dst.metadata(remote.id)).byte_size == len(DATA)
        # The destination reads the bytes back from the origin store.
        digest = hashlib.sha256(await dst.fetch_bytes(remote)).digest()
        assert digest == hashlib.sha256(DATA).digest()


async def test_cancelled_upload_records_nothing(gemini_emu: GeminiFilesEmulator,
                                                clock: Clock) -> None:
    started = anyio.Event()

    async def slow() -> AsyncIterator[bytes]:
        yield b"a" * 300_000
        started.set()
        await anyio.sleep(30)
        yield b"b"

    async with GeminiFilesStore(api_key=gemini_emu.api_key, base_url=gemini_emu.url,
                                chunk_size=256 * 1024, clock=clock) as store:
        async with anyio.create_task_group() as tg:
            async def upload() -> None:
                await store.put(slow(), mime_type="video/mp4")
            tg.start_soon(upload)
            await started.wait()
            tg.cancel_scope.cancel()
        assert repr(store).endswith("files=0)")
    assert gemini_emu.files == {}


async def test_cancelled_while_processing_deletes_the_file(clock: Clock) -> None:
    with GeminiFilesEmulator(clock=clock, processing_polls=10_000) as emu:
        async with GeminiFilesStore(api_key=emu.api_key, base_url=emu.url, clock=clock,
                                    poll_interval=0.01) as store:
            with anyio.move_on_after(0.5):
                await store.put(b"\x00" * 4096, mime_type="video/mp4")
            assert repr(store).endswith("files=0)")
        assert emu.upload_count == 1 and emu.files == {}
        assert len(emu.deleted) == 1
