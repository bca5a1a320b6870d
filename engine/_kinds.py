"""Content-kind detection: magic bytes first, then the declared MIME type, then the file name.

Bytes cannot lie about their format the way a name or a header can, so a recognisable signature
wins. Container formats (ZIP, ISO base media) are refined by the MIME type or extension: a
``.docx`` is a ZIP file, but a document to the reader. The tables are plain data so that adding a
format is one line.
"""

from __future__ import annotations

import posixpath
from urllib.parse import urlsplit

from ._content import ContentKind

__all__ = ["SNIFF_BYTES", "detect_kind", "detect_mime_type", "kind_of_mime"]

SNIFF_BYTES = 4096
"""How many leading bytes detection looks at (tar's signature sits at offset 257)."""

_K = ContentKind

# Fixed signatures at offset 0: (prefix, MIME type). Longer, more specific prefixes first.
_PREFIXES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
    (b"\x00\x00\x01\x00", "image/vnd.microsoft.icon"),
    (b"%PDF-", "application/pdf"),
    (b"ID3", "audio/mpeg"),
    (b"\xff\xfb", "audio/mpeg"),
    (b"\xff\xf3", "audio/mpeg"),
    (b"\xff\xf2", "audio/mpeg"),
    (b"\xff\xf1", "audio/aac"),
    (b"\xff\xf9", "audio/aac"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
    (b"MThd", "audio/midi"),
    (b"glTF", "model/gltf-binary"),
    (b"Kaydara FBX Binary", "application/vnd.autodesk.fbx"),
    (b"ply\n", "model/ply"),
    (b"ply\r\n", "model/ply"),
    (b"ISO-10303-21;", "model/step"),
    (b"AC10", "image/vnd.dwg"),
    (b"PK\x03\x04", "application/zip"),
    (b"PK\x05\x06", "application/zip"),
    (b"\x1f\x8b", "application/gzip"),
    (b"BZh", "application/x-bzip2"),
    (b"\xfd7zXZ\x00", "application/x-xz"),
    (b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (b"Rar!\x1a\x07", "application/vnd.rar"),
    (b"\x28\xb5\x2f\xfd", "application/zstd"),
    (b"SQLite format 3\x00", "application/vnd.sqlite3"),
    (b"PAR1", "application/vnd.apache.parquet"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "application/x-ole-storage"),
    (b"{\\rtf", "application/rtf"),
)

# RIFF and IFF containers name their format at offset 8.
_RIFF = {b"WEBP": "image/webp", b"WAVE": "audio/wav", b"AVI ": "video/x-msvideo"}
_IFF = {b"AIFF": "audio/aiff", b"AIFC": "audio/aiff"}

# ISO base media ("ftyp" box): the major brand at offset 8 says what the file holds.
_FTYP_BRANDS = {
    b"heic": "image/heic", b"heix": "image/heic", b"hevc": "image/heic", b"hevx": "image/heic",
    b"heim": "image/heic", b"heis": "image/heic",
    b"mif1": "image/heif", b"msf1": "image/heif",
    b"avif": "image/avif", b"avis": "image/avif",
    b"M4A ": "audio/mp4", b"M4B ": "audio/mp4", b"M4P ": "audio/mp4", b"F4A ": "audio/mp4",
    b"qt  ": "video/quicktime",
    b"3gp4": "video/3gpp", b"3gp5": "video/3gpp", b"3gp6": "video/3gpp", b"3g2a": "video/3gpp2",
    b"crx ": "image/x-canon-cr3",
}

# Extension -> MIME type. Our own table: the platform's ``mimetypes`` differs between machines.
_EXTENSIONS: dict[str, str] = {
    # images
    "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "jpe": "image/jpeg",
    "gif": "image/gif", "webp": "image/webp", "heic": "image/heic", "heif": "image/heif",
    "avif": "image/avif", "bmp": "image/bmp", "tif": "image/tiff", "tiff": "image/tiff",
    "svg": "image/svg+xml", "ico": "image/vnd.microsoft.icon",
    # audio
    "mp3": "audio/mpeg", "wav": "audio/wav", "ogg": "audio/ogg", "oga": "audio/ogg",
    "opus": "audio/opus", "flac": "audio/flac", "m4a": "audio/mp4", "aac": "audio/aac",
    "aif": "audio/aiff", "aiff": "audio/aiff", "mid": "audio/midi", "midi": "audio/midi",
    "weba": "audio/webm",
    # video
    "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "webm": "video/webm",
    "mkv": "video/x-matroska", "avi": "video/x-msvideo", "mpeg": "video/mpeg",
    "mpg": "video/mpeg", "3gp": "video/3gpp", "ogv": "video/ogg", "wmv": "video/x-ms-wmv",
    "flv": "video/x-flv",
    # documents
    "pdf": "application/pdf", "doc": "application/msword",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "ppt": "application/vnd.ms-powerpoint", "odt": "application/vnd.oasis.opendocument.text",
    "rtf": "application/rtf", "epub": "application/epub+zip",
    # 3D
    "glb": "model/gltf-binary", "gltf": "model/gltf+json", "stl": "model/stl",
    "obj": "model/obj", "ply": "model/ply", "fbx": "application/vnd.autodesk.fbx",
    "usdz": "model/vnd.usdz+zip", "3mf": "model/3mf",
    # CAD
    "step": "model/step", "stp": "model/step", "iges": "model/iges", "igs": "model/iges",
    "dxf": "image/vnd.dxf", "dwg": "image/vnd.dwg",
    # archives
    "zip": "application/zip", "tar": "application/x-tar", "gz": "application/gzip",
    "tgz": "application/gzip", "bz2": "application/x-bzip2", "xz": "application/x-xz",
    "7z": "application/x-7z-compressed", "rar": "application/vnd.rar", "zst": "application/zstd",
    # text
    "txt": "text/plain", "text": "text/plain", "log": "text/plain", "md": "text/markdown",
    "markdown": "text/markdown", "html": "text/html", "htm": "text/html", "css": "text/css",
    "js": "text/javascript", "py": "text/x-python", "rst": "text/x-rst", "xml": "text/xml",
    # data
    "csv": "text/csv", "tsv": "text/tab-separated-values", "json": "application/json",
    "jsonl": "application/x-ndjson", "ndjson": "application/x-ndjson",
    "yaml": "application/yaml", "yml": "application/yaml", "toml": "application/toml",
    "parquet": "application/vnd.apache.parquet", "sqlite": "application/vnd.sqlite3",
    "db": "application/vnd.sqlite3", "xls": "application/vnd.ms-excel",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
}

# Exact MIME types whose kind their top-level type does not tell.
_MIME_KINDS: dict[str, ContentKind] = {
    "image/vnd.dxf": _K.CAD, "image/vnd.dwg": _K.CAD, "application/dxf": _K.CAD,
    "model/step": _K.CAD, "model/iges": _K.CAD, "application/step": _K.CAD,
    "application/iges": _K.CAD, "application/vnd.autodesk.fbx": _K.THREE_D,
    "application/pdf": _K.DOCUMENT, "application/msword": _K.DOCUMENT,
    "application/rtf": _K.DOCUMENT, "application/epub+zip": _K.DOCUMENT,
    "application/vnd.ms-powerpoint": _K.DOCUMENT, "application/x-ole-storage": _K.DOCUMENT,
    "application/zip": _K.ARCHIVE, "application/x-tar": _K.ARCHIVE,
    "application/gzip": _K.ARCHIVE, "application/x-gzip": _K.ARCHIVE,
    "application/x-bzip2": _K.ARCHIVE, "application/x-xz": _K.ARCHIVE,
    "application/x-7z-compressed": _K.ARCHIVE, "application/vnd.rar": _K.ARCHIVE,
    "application/x-rar-compressed": _K.ARCHIVE, "application/zstd": _K.ARCHIVE,
    "text/csv": _K.DATA, "text/tab-separated-values": _K.DATA, "application/json": _K.DATA,
    "application/x-ndjson": _K.DATA, "application/yaml": _K.DATA, "application/toml": _K.DATA,
    "application/xml": _K.DATA, "application/vnd.apache.parquet": _K.DATA,
    "application/vnd.sqlite3": _K.DATA, "application/x-sqlite3": _K.DATA,
    "application/vnd.ms-excel": _K.DATA,
    "application/javascript": _K.TEXT, "application/x-sh": _K.TEXT,
}

_MIME_PREFIX_KINDS: tuple[tuple[str, ContentKind], ...] = (
    ("image/", _K.IMAGE), ("audio/", _K.AUDIO), ("video/", _K.VIDEO), ("model/", _K.THREE_D),
    ("text/", _K.TEXT),
    ("application/vnd.openxmlformats-officedocument.spreadsheetml", _K.DATA),
    ("application/vnd.oasis.opendocument.spreadsheet", _K.DATA),
    ("application/vnd.openxmlformats-officedocument", _K.DOCUMENT),
    ("application/vnd.oasis.opendocument", _K.DOCUMENT),
)

_GENERIC_MIMES = {"application/octet-stream", "binary/octet-stream", "application/unknown", ""}


def _sniff(head: bytes) -> str | None:
    """The MIME type a signature at the start of ``head`` proves, if any."""
    for prefix, mime in _PREFIXES:
        if head.startswith(prefix):
            return mime
    if len(head) >= 12:
        tag = head[8:12]
        if head.startswith(b"RIFF") and tag in _RIFF:
            return _RIFF[tag]
        if head.startswith(b"FORM") and tag in _IFF:
            return _IFF[tag]
        if head[4:8] == b"ftyp":
            return _FTYP_BRANDS.get(tag, "video/mp4")
    if head.startswith(b"\x1a\x45\xdf\xa3"):  # EBML: WebM names its doctype early
        return "video/webm" if b"webm" in head[:64] else "video/x-matroska"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "application/x-tar"
    return _sniff_text(head)


def _sniff_text(head: bytes) -> str | None:
    """Recognise the few text formats that announce themselves (SVG, HTML, DXF)."""
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:256].lower()
    if start.startswith(b"<svg") or (start.startswith(b"<?xml") and b"<svg" in head[:1024]):
        return "image/svg+xml"
    if start.startswith((b"<!doctype html", b"<html")):
        return "text/html"
    if start.startswith((b"0\nsection", b"0\r\nsection")):
        return "image/vnd.dxf"
    return None


def _looks_like_text(head: bytes) -> bool:
    """UTF-8 without NUL bytes (a cut multi-byte character at the end is allowed)."""
    if not head or b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    return True


def _extension_mime(name: str | None) -> str | None:
    if not name:
        return None
    path = urlsplit(name).path if "://" in name else name
    base = posixpath.basename(path.replace("\\", "/")).lower()
    _, dot, ext = base.rpartition(".")
    return _EXTENSIONS.get(ext) if dot else None


def _clean_mime(mime_type: str | None) -> str | None:
    if not mime_type:
        return None
    mime = mime_type.split(";", 1)[0].strip().lower()
    return None if mime in _GENERIC_MIMES or "/" not in mime else mime


def _refines(sniffed: str, hint: str) -> bool:
    """Whether ``hint`` names a format built on the container that ``sniffed`` found."""
    if sniffed == "application/zip":
        return (hint.endswith("+zip") or hint == "model/3mf"
                or hint.startswith(("application/vnd.openxmlformats-officedocument",
                                    "application/vnd.oasis.opendocument")))
    if sniffed == "video/mp4":  # a generic ISO-media brand
        return hint in _FTYP_BRANDS.values()
    return False


def kind_of_mime(mime_type: str | None) -> ContentKind:
    """The kind a MIME type stands for (``OTHER`` when it says nothing recognisable)."""
    mime = _clean_mime(mime_type)
    if mime is None:
        return _K.OTHER
    if mime in _MIME_KINDS:
        return _MIME_KINDS[mime]
    for prefix, kind in _MIME_PREFIX_KINDS:
        if mime.startswith(prefix):
            return kind
    if mime.endswith(("+json", "+xml")):
        return _K.DATA
    if mime.endswith("+zip"):
        return _K.ARCHIVE
    return _K.OTHER


def detect_mime_type(head: bytes | None = None, *, mime_type: str | None = None,
                     name: str | None = None) -> str | None:
    """Best MIME type for content from its first bytes, a declared type and a file name or URL.

    A signature in ``head`` wins; a ZIP or generic ISO-media signature is refined by a more
    specific declared type or extension (``.docx``, ``.m4a``). Returns ``None`` when nothing is
    known and the bytes are not text.
    """
    declared = _clean_mime(mime_type)
    by_name = _extension_mime(name)
    hint = declared or by_name
    sniffed = _sniff(head) if head else None
    if sniffed is not None:
        if hint and _refines(sniffed, hint):
            return hint
        return sniffed
    if hint is not None:
        return hint
    if head is not None and _looks_like_text(head):
        return "text/plain"
    return None


def detect_kind(head: bytes | None = None, *, mime_type: str | None = None,
                name: str | None = None) -> ContentKind:
    """The ``ContentKind`` of content: magic bytes first, then MIME type, then file extension."""
    return kind_of_mime(detect_mime_type(head, mime_type=mime_type, name=name))
