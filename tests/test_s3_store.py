"""S3Store against a real SeaweedFS server (tests/realservers.py starts it)."""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path

import anyio
import httpx
import obstore
import pytest
from obstore.store import S3Store as RawS3
from realservers import S3Server
from rss import RssSampler

from plait import (
    ContentError,
    ContentHandle,
    ContentKind,
    ContentNotFound,
    InvalidHandleId,
    UrlSource,
)
from plait.stores import S3Store

MiB = 1024 * 1024


@pytest.fixture
def prefix() -> str:
    return f"t-{secrets.token_hex(4)}/"


@pytest.fixture
def store(s3_server: S3Server, prefix: str) -> S3Store:
    return S3Store(s3_server.bucket, prefix=prefix, endpoint=s3_server.endpoint,
                   region=s3_server.region, access_key_id=s3_server.access_key_id,
                   secret_access_key=s3_server.secret_access_key)


def keys_under(server: S3Server, prefix: str) -> list[str]:
    raw = RawS3(server.bucket, endpoint=server.endpoint, region=server.region,
                access_key_id=server.access_key_id, secret_access_key=server.secret_access_key,
                client_options={"allow_http": True})
    return [meta["path"] for batch in obstore.list(raw, prefix) for meta in batch]


async def pattern(total: int, chunk: int, seed: int = 7) -> AsyncIterator[bytes]:
    """A deterministic, non-repeating-per-chunk byte stream (so misplaced parts are caught)."""
    sent = 0
    block = hashlib.sha256(str(seed).encode()).digest() * (chunk // 32 + 1)
    index = 0
    while sent < total:
        size = min(chunk, total - sent)
        yield index.to_bytes(8, "big") + block[: size - 8] if size >= 8 else block[:size]
        sent += size
        index += 1


async def digest_of(chunks: AsyncIterator[bytes]) -> tuple[str, int]:
    h, n = hashlib.sha256(), 0
    async for c in chunks:
        h.update(c)
        n += len(c)
    return h.hexdigest(), n


async def test_bytes_round_trip_keeps_metadata(store: S3Store) -> None:
    handle = await store.put(b"%PDF-1.7 hello", mime_type="application/pdf",
                             display_name="Q3 report – final.pdf")
    assert handle.kind is ContentKind.DOCUMENT
    assert handle.byte_size == 14
    assert await store.fetch_bytes(handle) == b"%PDF-1.7 hello"
    again = await store.metadata(handle.id)  # bare id: everything comes back from the bucket
    assert again == handle


async def test_explicit_kind_wins_and_unknown_kind_is_refused(store: S3Store) -> None:
    handle = await store.put(b"solid cube", kind="3d", mime_type="application/octet-stream")
    assert (await store.metadata(handle)).kind is ContentKind.THREE_D
    with pytest.raises(ContentError, match="unknown content kind"):
        await store.put(b"x", kind="hologram")


async def test_streamed_multipart_upload_and_chunked_read(store: S3Store) -> None:
    total = 19 * MiB + 123  # three 8 MiB parts, the last one short
    expected, _ = await digest_of(pattern(total, 64 * 1024))
    handle = await store.put(pattern(total, 64 * 1024), mime_type="video/mp4")
    assert handle.byte_size == total and handle.kind is ContentKind.VIDEO
    sizes: list[int] = []
    h = hashlib.sha256()
    async for chunk in store.fetch_stream(handle):
        sizes.append(len(chunk))
        h.update(chunk)
    assert h.hexdigest() == expected
    assert len(sizes) > 1 and max(sizes) < total  # streamed, not one buffer


async def test_ranged_reads(store: S3Store) -> None:
    data = os.urandom(9 * MiB)
    handle = await store.put(data)
    start = 8 * MiB - 10  # across the first part boundary
    got = b"".join([c async for c in store.fetch_stream(handle, offset=start, length=100)])
    assert got == data[start:start + 100]
    tail = b"".join([c async for c in store.fetch_stream(handle, offset=9 * MiB - 5)])
    assert tail == data[-5:]
    assert [c async for c in store.fetch_stream(handle, offset=3, length=0)] == []
    with pytest.raises(ContentError):
        async for _ in store.fetch_stream(handle, offset=-1):
            pass


async def test_path_body(store: S3Store, tmp_path: Path) -> None:
    path = tmp_path / "photo.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
    handle = await store.put(path)
    assert handle.display_name == "photo.png"
    assert handle.mime_type == "image/png" and handle.kind is ContentKind.IMAGE
    assert await store.fetch_bytes(handle) == path.read_bytes()
    with pytest.raises(ContentError, match="cannot read"):
        await store.put(tmp_path / "missing.bin")


async def test_presigned_url_serves_the_bytes_and_nothing_else(store: S3Store) -> None:
    handle = await store.put(b"GIF89a-ish", mime_type="image/gif")
    source = await store.resolve(handle, for_provider="openai")
    assert isinstance(source, UrlSource) and source.mime_type == "image/gif"
    assert "X-Amz-Signature=" in source.url and "secret" not in source.url.lower()
    async with httpx.AsyncClient() as http:
        ok = await http.get(source.url)
        assert ok.status_code == 200 and ok.content == b"GIF89a-ish"
        other_id = handle.id[:-1] + ("b" if handle.id.endswith("a") else "a")
        forged = await http.get(source.url.replace(handle.id, other_id))
        assert forged.status_code == 403


async def test_missing_and_deleted_content(store: S3Store) -> None:
    handle = await store.put(b"short-lived")
    await store.delete(handle)
    ghost = ContentHandle(handle.id, ContentKind.OTHER)
    with pytest.raises(ContentNotFound):
        await store.metadata(ghost)
    with pytest.raises(ContentNotFound):
        await store.fetch_bytes(ghost)
    with pytest.raises(ContentNotFound):
        await store.resolve(ghost)
    with pytest.raises(ContentNotFound):
        await store.delete(ghost)


async def test_hostile_ids_are_refused(store: S3Store) -> None:
    for bad in ["../etc/passwd", "h_" + "a" * 25 + "/", "h_AAAA", "", "h_x%2f", "/abs/h_x"]:
        with pytest.raises(InvalidHandleId):
            await store.metadata(bad)
        with pytest.raises(InvalidHandleId):
            await store.delete(bad)
        with pytest.raises(InvalidHandleId):
            await store.fetch_bytes(ContentHandle(bad, ContentKind.OTHER))


async def test_failing_body_stores_nothing(store: S3Store, s3_server: S3Server,
                                           prefix: str) -> None:
    async def broken() -> AsyncIterator[bytes]:
        for _ in range(3):
            yield b"x" * (4 * MiB)
        raise OSError("disk went away")

    with pytest.raises(ContentError, match="nothing was stored") as info:
        await store.put(broken())
    assert isinstance(info.value.__cause__, OSError)
    assert keys_under(s3_server, prefix) == []


async def test_non_bytes_chunk_is_a_content_error(store: S3Store) -> None:
    async def wrong() -> AsyncIterator[bytes]:
        yield b"ok"
        yield "text"  # type: ignore[misc]

    with pytest.raises(ContentError, match="must yield bytes"):
        await store.put(wrong())


async def test_cancelled_upload_stops_pulling_and_stores_nothing(
        store: S3Store, s3_server: S3Server, prefix: str) -> None:
    pulled = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal pulled
        while True:
            pulled += 1
            yield b"y" * MiB

    async with aclosing(endless()) as body:
        with anyio.move_on_after(0.3):
            await store.put(body)
    at_cancel = pulled
    await anyio.sleep(0.2)
    assert pulled <= at_cancel + 1
    assert keys_under(s3_server, prefix) == []


async def test_wrong_credentials_are_a_content_error_without_secrets(
        s3_server: S3Server) -> None:
    bad = S3Store(s3_server.bucket, endpoint=s3_server.endpoint, region=s3_server.region,
                  access_key_id=s3_server.access_key_id, secret_access_key="not-the-secret")
    with pytest.raises(ContentError) as info:
        await bad.put(b"data")
    assert "not-the-secret" not in str(info.value) and "refused" in str(info.value)
    assert "not-the-secret" not in repr(bad)


@pytest.mark.slow
async def test_large_stream_round_trip_keeps_memory_flat(s3_server: S3Server,
                                                         prefix: str) -> None:
    # Small parts and little concurrency: at most ~15 MiB of parts in flight for a 64 MiB body.
    store = S3Store(s3_server.bucket, prefix=prefix, endpoint=s3_server.endpoint,
                    region=s3_server.region, access_key_id=s3_server.access_key_id,
                    secret_access_key=s3_server.secret_access_key, part_size=5 * MiB,
                    max_concurrency=2)
    total = 64 * MiB
    expected, _ = await digest_of(pattern(total, 256 * 1024, seed=3))
    with RssSampler() as rss:
        handle = await store.put(pattern(total, 256 * 1024, seed=3))
        digest, size = await digest_of(store.fetch_stream(handle))
    assert (digest, size) == (expected, total)
    assert rss.peak - rss.base < 40 * MiB, (rss.peak - rss.base) / MiB


def test_repr_and_part_size_guard(s3_server: S3Server) -> None:
    with pytest.raises(ValueError, match="5 MiB"):
        S3Store("b", endpoint=s3_server.endpoint, part_size=MiB)
    assert repr(S3Store("b", prefix="p", endpoint=s3_server.endpoint)) == (
        "S3Store(bucket='b', prefix='p/')"
    )

