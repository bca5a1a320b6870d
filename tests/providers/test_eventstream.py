"""The event-stream parser: frames as AWS documents them, CRCs checked, any chunking."""

from __future__ import annotations

import struct
import uuid
import zlib

import pytest
from _native_helpers import aiter_chunks, collect, every_split

from plait.providers._eventstream import EventStreamError, Frame, encode_frame, iter_frames


def frames_of(chunks: list[bytes]) -> list[Frame]:
    return collect(iter_frames(aiter_chunks(chunks)))


def raw_frame(headers: bytes, payload: bytes) -> bytes:
    """A frame assembled by hand from the documented layout (independent of encode_frame)."""
    total = 12 + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def header(name: str, kind: int, value: bytes) -> bytes:
    return bytes([len(name)]) + name.encode() + bytes([kind]) + value


def test_every_header_type_decodes() -> None:
    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")
    headers = b"".join([
        header("t", 0, b""), header("f", 1, b""),
        header("b", 2, struct.pack(">b", -5)), header("s", 3, struct.pack(">h", 300)),
        header("i", 4, struct.pack(">i", -70000)), header("l", 5, struct.pack(">q", 2**40)),
        header("y", 6, struct.pack(">H", 3) + b"\x00\x01\x02"),
        header("str", 7, struct.pack(">H", 5) + "héé".encode()[:5]),
        header("ts", 8, struct.pack(">q", 1700000000000)),
        header("u", 9, ident.bytes),
    ])
    (frame,) = frames_of([raw_frame(headers, b'{"x":1}')])
    assert frame.headers == {"t": True, "f": False, "b": -5, "s": 300, "i": -70000, "l": 2**40,
                             "y": b"\x00\x01\x02", "str": "héé", "ts": 1700000000000,
                             "u": ident}
    assert frame.payload == b'{"x":1}'
    assert frame.header("str") == "héé" and frame.header("i") is None


def test_encoder_matches_the_documented_layout() -> None:
    hand = raw_frame(header(":event-type", 7, struct.pack(">H", 9) + b"messageStart"[:9]),
                     b"{}")
    assert encode_frame({":event-type": "messageSt"}, b"{}") == hand


STREAM = b"".join(encode_frame({":event-type": f"e{i}", ":message-type": "event",
                                ":content-type": "application/json", "n": i, "ok": i % 2 == 0},
                               b'{"i":%d}' % i) for i in range(4))


def test_frames_survive_every_split() -> None:
    expected = frames_of([STREAM])
    assert [f.header(":event-type") for f in expected] == ["e0", "e1", "e2", "e3"]
    assert [f.headers["ok"] for f in expected] == [True, False, True, False]
    for chunks in every_split(STREAM):
        assert frames_of(chunks) == expected


def test_empty_payload_and_no_headers() -> None:
    (frame,) = frames_of([encode_frame({}, b"")])
    assert frame.headers == {} and frame.payload == b""


@pytest.mark.parametrize(("where", "match"), [(5, "prelude CRC"), (20, "message CRC"),
                                              (-1, "message CRC")])
def test_corruption_is_detected(where: int, match: str) -> None:
    data = bytearray(encode_frame({":event-type": "x"}, b"payload"))
    data[where] ^= 0x01
    with pytest.raises(EventStreamError, match=match):
        frames_of([bytes(data)])


def test_truncated_stream_and_absurd_lengths() -> None:
    with pytest.raises(EventStreamError, match="inside a frame"):
        frames_of([STREAM[:-3]])
    bogus = struct.pack(">II", 8, 0)
    with pytest.raises(EventStreamError, match="length"):
        frames_of([bogus + struct.pack(">I", zlib.crc32(bogus)) + b"\x00" * 8])
    headers_overrun = raw_frame(header("a", 7, struct.pack(">H", 50) + b"short"), b"")
    with pytest.raises(EventStreamError, match="header"):
        frames_of([headers_overrun])
    assert frames_of([]) == []
