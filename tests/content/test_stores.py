"""Round trips through every store with every body type, and the store error contract."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from plait import (
    ContentError,
    ContentHandle,
    ContentKind,
    ContentNotFound,
    ContentStore,
    InlineSource,
    LocalPathSource,
    PlaitError,
)
from plait.stores import LocalFileStore, MemoryStore

from .conftest import MP3, PNG

# Marked at module level so anyio parametrizes the backend at collection time, alongside this
# module's own parameters (tests/conftest.py adds the marker too late for parametrized tests).



async def _chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


async def _read_all(store: ContentStore, handle: ContentHandle) -> bytes:
    return b"".join([chunk async for chunk in store.fetch_stream(handle)])


async def test_bytes_round_trip(store: ContentStore) -> None:
    handle = await store.put(PNG, display_name="cat.png")
    assert handle.kind is ContentKind.IMAGE
    assert handle.mime_type == "image/png"
    assert handle.byte_size == len(PNG)
    assert handle.display_name == "cat.png"
    assert len(handle.id) <= 32
    assert await store.fetch_bytes(handle) == PNG
    assert await _read_all(store, handle) == PNG
    assert await store.metadata(handle.id) == handle
    assert await store.metadata(handle) == handle


async def test_stream_is_chunked(store: ContentStore) -> None:
    data = os.urandom(5500)
    handle = await store.put(data)
    sizes = [len(chunk) async for chunk in store.fetch_stream(handle)]
    assert sum(sizes) == 5500
    assert max(sizes) <= 1000 and len(sizes) == 6


async def test_path_bodies(store: ContentStore, tmp_path: Path) -> None:
    path = tmp_path / "song.mp3"
    path.write_bytes(MP3 * 50)
    for body in (path, str(path), f"file://{path}"):
        handle = await store.put(body)
        assert handle.kind is ContentKind.AUDIO
        assert handle.display_name == "song.mp3"
        assert await store.fetch_bytes(handle) == MP3 * 50


async def test_async_iterable_body(store: ContentStore) -> None:
    data = os.urandom(10_000)
    handle = await store.put(_chunks(data, 777), mime_type="application/x-thing",
                             kind="data")
    assert handle.kind is ContentKind.DATA
    assert handle.mime_type == "application/x-thing"
    assert handle.byte_size == 10_000
    assert await _read_all(store, handle) == data


async def test_url_body(store: ContentStore,
                        http_server: tuple[str, dict[str, tuple[int, str, bytes]]]) -> None:
    base, routes = http_server
    routes["/files/report.pdf"] = (200, "application/pdf", b"%PDF-1.4\n" + b"x" * 3000)
    handle = await store.put(f"{base}/files/report.pdf?token=secret")
    assert handle.kind is ContentKind.DOCUMENT
    assert handle.mime_type == "application/pdf"
    assert handle.display_name == "report.pdf"
    assert await store.fetch_bytes(handle) == routes["/files/report.pdf"][2]


async def test_url_errors_are_typed_and_hide_query(
        store: ContentStore, http_server: tuple[str, dict[str, tuple[int, str, bytes]]]) -> None:
    base, _ = http_server
    with pytest.raises(ContentError) as info:
        await store.put(f"{base}/missing?token=hunter2")
    assert "404" in str(info.value)
    assert "hunter2" not in str(info.value)
    with pytest.raises(ContentError):
        await store.put("http://127.0.0.1:1/unreachable")


async def test_bad_bodies(store: ContentStore, tmp_path: Path) -> None:
    with pytest.raises(ContentError):
        await store.put(tmp_path / "nope.bin")
    with pytest.raises(ContentError):
        await store.put(tmp_path)  # a directory
    with pytest.raises(ContentError):
        await store.put("ftp://host/file")
    with pytest.raises(ContentError):
        await store.put(12345)  # type: ignore[arg-type]
    with pytest.raises(ContentError):
        await store.put(b"x", kind="hologram")

    async def not_bytes() -> AsyncIterator[bytes]:
        yield "text"  # type: ignore[misc]

    with pytest.raises(ContentError):
        await store.put(not_bytes())


async def test_missing_handle(store: ContentStore) -> None:
    ghost = ContentHandle("h_" + "a" * 26, "image")
    with pytest.raises(ContentNotFound):
        await store.fetch_bytes(ghost)
    with pytest.raises(ContentNotFound):
        await _read_all(store, ghost)
    with pytest.raises(ContentNotFound):
        await store.metadata(ghost)
    with pytest.raises(ContentNotFound):
        await store.resolve(ghost)
    with pytest.raises(ContentNotFound):
        await store.delete(ghost)


async def test_delete(store: ContentStore) -> None:
    handle = await store.put(b"bye")
    await store.delete(handle)
    with pytest.raises(ContentNotFound):
        await store.fetch_bytes(handle)


async def test_resolve_sources(tmp_path: Path) -> None:
    memory = MemoryStore()
    handle = await memory.put(PNG)
    assert await memory.resolve(handle) == InlineSource(data=PNG, mime_type="image/png")
    local = LocalFileStore(tmp_path)
    handle = await local.put(PNG)
    source = await local.resolve(handle)
    assert isinstance(source, LocalPathSource)
    assert Path(source.path).read_bytes() == PNG
    assert Path(source.path).parent == tmp_path.resolve()


async def test_local_store_survives_restart(tmp_path: Path) -> None:
    first = LocalFileStore(tmp_path / "s")
    handle = await first.put(MP3, display_name="a.mp3")
    second = LocalFileStore(tmp_path / "s")
    assert await second.metadata(handle.id) == handle
    assert await second.fetch_bytes(handle) == MP3


async def test_failed_put_leaves_nothing(tmp_path: Path) -> None:
    store = LocalFileStore(tmp_path / "s")

    async def broken() -> AsyncIterator[bytes]:
        yield b"partial data"
        raise ContentError("source went away")

    with pytest.raises(ContentError, match="went away"):
        await store.put(broken())
    assert sorted(os.listdir(tmp_path / "s")) == [".tmp"]
    assert os.listdir(tmp_path / "s" / ".tmp") == []


async def test_corrupt_metadata_is_typed(tmp_path: Path) -> None:
    store = LocalFileStore(tmp_path)
    handle = await store.put(b"data")
    (tmp_path / f"{handle.id}.meta.json").write_bytes(b"{not json")
    with pytest.raises(ContentError, match="corrupt"):
        await store.metadata(handle)


async def test_everything_raised_is_plait(store: ContentStore) -> None:
    for call in (store.metadata("../etc/passwd"), store.put(object())):  # type: ignore[arg-type]
        try:
            await call
        except Exception as exc:  # noqa: BLE001 - checking what escapes
            assert isinstance(exc, PlaitError), exc


async def test_streams_are_never_joined_in_memory(tmp_path: Path) -> None:
    """64 MiB through put and fetch_stream with Python allocations staying near one chunk."""
    import tracemalloc

    store = LocalFileStore(tmp_path / "s", fsync=False)
    block = os.urandom(1 << 20)

    async def source() -> AsyncIterator[bytes]:
        for _ in range(64):
            yield block  # the same object each time: the source itself allocates nothing

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        handle = await store.put(source())
        _, put_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        total = 0
        async for chunk in store.fetch_stream(handle):
            total += len(chunk)
        _, read_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert handle.byte_size == total == 64 << 20
    assert put_peak < 8 << 20, put_peak
    assert read_peak < 12 << 20, read_peak


async def test_abandoned_stream_releases_its_file(tmp_path: Path) -> None:
    """Breaking out of fetch_stream stops the read-ahead thread and closes the file."""
    import threading

    import anyio

    store = LocalFileStore(tmp_path / "s", chunk_size=64 * 1024, fsync=False)
    handle = await store.put(os.urandom(4 << 20))
    def readers() -> int:
        return sum(t.name == "plait-readahead" for t in threading.enumerate())

    fds_before = len(os.listdir("/proc/self/fd"))
    stream = store.fetch_stream(handle)
    first = await stream.__anext__()
    assert len(first) == 64 * 1024
    assert readers() == 1
    await stream.aclose()  # type: ignore[attr-defined]
    for _ in range(200):  # the reader thread notices the close and exits
        if readers() == 0:
            break
        await anyio.sleep(0.01)
    assert readers() == 0
    assert len(os.listdir("/proc/self/fd")) <= fds_before


@pytest.mark.parametrize("depth", [1, 2, 3, 8])
async def test_read_ahead_depths(tmp_path: Path, depth: int) -> None:
    from plait.stores._readahead import iter_file

    data = os.urandom(10 * 4096 + 17)
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    file = open(path, "rb", buffering=0)  # noqa: SIM115 - iter_file owns and closes it
    chunks = [c async for c in iter_file(file, chunk_size=4096, depth=depth)]
    assert b"".join(chunks) == data
    assert [len(c) for c in chunks[:-1]] == [4096] * 10
