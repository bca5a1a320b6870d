"""The emulators' streaming multipart parser against the client's streamed multipart body."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plait.stores._http import MultipartBody
from plait.testing._blobs import MultipartError, parse_multipart


def _parse(body: bytes, content_type: str, cuts: list[int]) -> dict[str, bytes]:
    got: dict[str, bytes] = {}

    def open_part(headers: dict[str, str]):  # type: ignore[no-untyped-def]
        name = headers["_name"]
        got[name] = b""

        def write(data: bytes) -> None:
            got[name] += data
        return write

    points = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    pieces = [body[a:b] for a, b in itertools.pairwise(points)]
    parse_multipart(iter(pieces), content_type, open_part)
    return got


async def _join(body: MultipartBody) -> bytes:
    return b"".join([c async for c in body])


@settings(max_examples=60, deadline=None)
@given(payload=st.binary(max_size=3000), cuts=st.lists(st.integers(0, 10_000), max_size=12))
def test_any_split_of_the_body_parses_to_the_same_parts(payload: bytes, cuts: list[int]) -> None:
    import anyio

    async def chunks() -> AsyncIterator[bytes]:
        yield payload

    body = MultipartBody({"purpose": "user_data"}, file_field="file", filename="a.bin",
                         mime_type="application/octet-stream", chunks=chunks(),
                         size=len(payload))
    raw = anyio.run(_join, body)
    assert len(raw) == body.content_length
    got = _parse(raw, body.content_type, cuts)
    assert got == {"purpose": b"user_data", "file": payload}


def test_truncated_body_is_an_error() -> None:
    with pytest.raises(MultipartError):
        _parse(b"--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nabc",
               "multipart/form-data; boundary=b", [])
