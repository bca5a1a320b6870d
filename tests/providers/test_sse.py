"""The incremental SSE parser against the WHATWG event-stream rules, split at every byte."""

from __future__ import annotations

import pytest
from _native_helpers import aiter_chunks, collect, every_split

from plait.providers._sse import SSEEvent, iter_sse

STREAM = (
    "\ufeff: a comment, ignored\n"
    "event: message_start\n"
    "data: {\"a\": 1}\n"
    "\n"
    "data: first line\r\n"
    "data:second line without space\r\n"
    "id: 7\r\n"
    "retry: 1500\r\n"
    "\r\n"
    "event: delta\r"
    "data: é ü 🐍\r"
    "\r"
    "unknown: field is ignored\n"
    "data\n"
    "\n"
    "event: named-without-data\n"
    "\n"
    "data: trailing event without blank line is dropped\n"
).encode()

EXPECTED = [
    SSEEvent('{"a": 1}', "message_start"),
    SSEEvent("first line\nsecond line without space", "message", "7", 1500),
    SSEEvent("é ü 🐍", "delta", "7", 1500),
    SSEEvent("", "message", "7", 1500),
]


def _parse(chunks: list[bytes]) -> list[SSEEvent]:
    return collect(iter_sse(aiter_chunks(chunks)))  # type: ignore[no-any-return]


def test_whole_stream() -> None:
    # A bare "data" line is an empty data line: its event is dispatched with data "" (the
    # buffer is "\n" until dispatch strips it); an event name without data dispatches nothing.
    assert _parse([STREAM]) == EXPECTED


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
def test_fixed_size_chunks(size: int) -> None:
    chunks = [STREAM[i:i + size] for i in range(0, len(STREAM), size)]
    assert _parse(chunks) == _parse([STREAM])


def test_every_two_way_split_and_bytewise() -> None:
    whole = _parse([STREAM])
    for chunks in every_split(STREAM):
        assert _parse(chunks) == whole


def test_crlf_split_between_cr_and_lf_is_one_line_end() -> None:
    assert _parse([b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]) == [SSEEvent("a"),
                                                                   SSEEvent("b")]


def test_a_cut_stream_never_yields_the_partial_event() -> None:
    assert _parse([b"data: complete\n\ndata: partial"]) == [SSEEvent("complete")]
