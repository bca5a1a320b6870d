"""Kind detection: magic bytes first, then MIME type, then file extension."""

from __future__ import annotations

import pytest

from plait import ContentKind, detect_kind, detect_mime_type

K = ContentKind

TAR = b"file.txt".ljust(257, b"\x00") + b"ustar\x0000" + b"\x00" * 100

# (leading bytes, expected MIME type, expected kind)
MAGIC = [
    (b"\x89PNG\r\n\x1a\n\x00\x00", "image/png", K.IMAGE),
    (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg", K.IMAGE),
    (b"GIF89a\x01\x00", "image/gif", K.IMAGE),
    (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp", K.IMAGE),
    (b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00", "image/heic", K.IMAGE),
    (b"\x00\x00\x00\x18ftypmif1\x00\x00\x00\x00", "image/heif", K.IMAGE),
    (b"%PDF-1.7\n", "application/pdf", K.DOCUMENT),
    (b"ID3\x04\x00\x00", "audio/mpeg", K.AUDIO),
    (b"\xff\xfb\x90\x00", "audio/mpeg", K.AUDIO),
    (b"RIFF\x00\x00\x00\x00WAVEfmt ", "audio/wav", K.AUDIO),
    (b"OggS\x00\x02", "audio/ogg", K.AUDIO),
    (b"fLaC\x00\x00", "audio/flac", K.AUDIO),
    (b"\x00\x00\x00\x20ftypM4A \x00\x00\x00\x00", "audio/mp4", K.AUDIO),
    (b"\x00\x00\x00\x20ftypisom\x00\x00\x02\x00", "video/mp4", K.VIDEO),
    (b"\x00\x00\x00\x14ftypqt  \x00\x00\x00\x00", "video/quicktime", K.VIDEO),
    (b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x84webm", "video/webm", K.VIDEO),
    (b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x88matroska", "video/x-matroska", K.VIDEO),
    (b"glTF\x02\x00\x00\x00", "model/gltf-binary", K.THREE_D),
    (b"ISO-10303-21;\nHEADER;", "model/step", K.CAD),
    (b"  0\nSECTION\n  2\nHEADER", "image/vnd.dxf", K.CAD),
    (b"PK\x03\x04\x14\x00", "application/zip", K.ARCHIVE),
    (b"\x1f\x8b\x08\x00", "application/gzip", K.ARCHIVE),
    (TAR, "application/x-tar", K.ARCHIVE),
    (b"<!DOCTYPE html><html>", "text/html", K.TEXT),
    (b"<?xml version='1.0'?>\n<svg xmlns='http://www.w3.org/2000/svg'>", "image/svg+xml", K.IMAGE),
]


@pytest.mark.parametrize(("head", "mime", "kind"), MAGIC, ids=[m for _, m, _ in MAGIC])
def test_magic_bytes(head: bytes, mime: str, kind: ContentKind) -> None:
    assert detect_mime_type(head) == mime
    assert detect_kind(head) is kind


def test_magic_bytes_beat_a_wrong_declaration() -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00"
    assert detect_mime_type(png, mime_type="audio/mpeg", name="song.mp3") == "image/png"
    assert detect_kind(png, mime_type="audio/mpeg", name="song.mp3") is K.IMAGE


@pytest.mark.parametrize(("name", "mime", "kind"), [
    ("photo.PNG", "image/png", K.IMAGE), ("a.jpeg", "image/jpeg", K.IMAGE),
    ("a.webp", "image/webp", K.IMAGE), ("a.heic", "image/heic", K.IMAGE),
    ("clip.mp3", "audio/mpeg", K.AUDIO), ("clip.wav", "audio/wav", K.AUDIO),
    ("clip.m4a", "audio/mp4", K.AUDIO), ("clip.flac", "audio/flac", K.AUDIO),
    ("film.mov", "video/quicktime", K.VIDEO), ("film.mkv", "video/x-matroska", K.VIDEO),
    ("film.webm", "video/webm", K.VIDEO), ("part.glb", "model/gltf-binary", K.THREE_D),
    ("part.gltf", "model/gltf+json", K.THREE_D), ("part.stl", "model/stl", K.THREE_D),
    ("part.obj", "model/obj", K.THREE_D), ("part.step", "model/step", K.CAD),
    ("part.stp", "model/step", K.CAD), ("part.iges", "model/iges", K.CAD),
    ("plan.dxf", "image/vnd.dxf", K.CAD), ("a.zip", "application/zip", K.ARCHIVE),
    ("a.tar", "application/x-tar", K.ARCHIVE), ("a.tar.gz", "application/gzip", K.ARCHIVE),
    ("notes.txt", "text/plain", K.TEXT), ("notes.md", "text/markdown", K.TEXT),
    ("page.html", "text/html", K.TEXT), ("table.csv", "text/csv", K.DATA),
    ("data.json", "application/json", K.DATA), ("report.pdf", "application/pdf", K.DOCUMENT),
    ("https://example.test/x/report.pdf?sig=abc", "application/pdf", K.DOCUMENT),
])
def test_extension(name: str, mime: str, kind: ContentKind) -> None:
    assert detect_mime_type(None, name=name) == mime
    assert detect_kind(None, name=name) is kind


def test_mime_type_beats_extension() -> None:
    assert detect_kind(None, mime_type="audio/ogg", name="x.png") is K.AUDIO
    assert detect_mime_type(None, mime_type="Image/PNG; charset=binary", name="x") == "image/png"


def test_generic_mime_falls_through_to_extension() -> None:
    assert detect_kind(None, mime_type="application/octet-stream", name="a.wav") is K.AUDIO


def test_containers_are_refined_by_name() -> None:
    docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    assert detect_mime_type(b"PK\x03\x04", name="report.docx") == docx
    assert detect_kind(b"PK\x03\x04", name="report.docx") is K.DOCUMENT
    assert detect_kind(b"PK\x03\x04", name="sheet.xlsx") is K.DATA
    # A name that is not a ZIP-based format does not override the signature.
    assert detect_kind(b"PK\x03\x04", name="data.json") is K.ARCHIVE
    iso = b"\x00\x00\x00\x20ftypisom\x00\x00\x02\x00"
    assert detect_mime_type(iso, name="voice.m4a") == "audio/mp4"


def test_unknown_content() -> None:
    assert detect_kind(b"plain words\n") is K.TEXT
    assert detect_mime_type(b"caf\xc3") == "text/plain"  # UTF-8 cut mid-character
    assert detect_kind(b"\x00\x01\x02\xff") is K.OTHER
    assert detect_mime_type(b"\x00\x01\x02\xff") is None
    assert detect_kind(None) is K.OTHER
    assert detect_kind(None, name="README") is K.OTHER
