"""No handle id can reach a path outside a LocalFileStore's root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plait import ContentHandle, ContentNotFound, InvalidHandleId
from plait.stores import LocalFileStore

# Marked at module level so anyio parametrizes the backend at collection time, alongside this
# module's own parameters (tests/conftest.py adds the marker too late for parametrized tests).


HOSTILE = [
    "../x", "../../etc/passwd", "/etc/passwd", "a/b", "a\\b", "..", ".", "",
    "%2e%2e%2fsecret", "..%2Fsecret", "h_abc%00", "h_abc\x00", "h_ab.meta", " h_abc",
    "h_" + "a" * 200, "\u2215etc\u2215passwd",
]


@pytest.fixture
def store(tmp_path: Path) -> LocalFileStore:
    return LocalFileStore(tmp_path / "root")


@pytest.mark.parametrize("bad_id", HOSTILE)
async def test_hostile_ids_are_refused(store: LocalFileStore, bad_id: str) -> None:
    handle = ContentHandle(bad_id, "other")
    with pytest.raises(InvalidHandleId):
        await store.metadata(bad_id)
    with pytest.raises(InvalidHandleId):
        await store.fetch_bytes(handle)
    with pytest.raises(InvalidHandleId):
        _ = [chunk async for chunk in store.fetch_stream(handle)]
    with pytest.raises(InvalidHandleId):
        await store.resolve(handle)
    with pytest.raises(InvalidHandleId):
        await store.delete(bad_id)


async def test_symlinks_under_root_are_not_followed(store: LocalFileStore,
                                                     tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"top secret")
    real = await store.put(b"decoy")
    root = Path(store.root)
    # Plant a data symlink and a metadata symlink for a well-formed id.
    os.symlink(secret, root / "h_planted.data")
    (root / "h_planted.meta.json").write_bytes(
        b'{"id":"h_planted","kind":"text","mime_type":null,"byte_size":10,"display_name":null}')
    with pytest.raises(InvalidHandleId):
        await store.fetch_bytes(ContentHandle("h_planted", "text"))
    with pytest.raises(InvalidHandleId):
        _ = [c async for c in store.fetch_stream(ContentHandle("h_planted", "text"))]
    os.symlink(root / f"{real.id}.meta.json", root / "h_meta.meta.json")
    with pytest.raises(InvalidHandleId):
        await store.metadata("h_meta")
    with pytest.raises(InvalidHandleId):
        await store.delete("h_meta")
    assert secret.read_bytes() == b"top secret"


async def test_valid_but_unknown_id_is_not_found(store: LocalFileStore) -> None:
    with pytest.raises(ContentNotFound):
        await store.metadata("h_doesnotexist")
