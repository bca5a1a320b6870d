"""Events on the wire between client and worker processes: plait's own checkpoint encoding."""

from __future__ import annotations

from plait import Event
from plait._checkpoint import SavedEvent, decode_event, encode_event

__all__ = ["dump_event", "load_event"]

_known: dict[str, type[Event]] = {}


def dump_event(ev: Event) -> tuple[str, bytes]:
    """``(type name, msgpack body)`` of an event.

    :raises CheckpointError: the event cannot be encoded.
    """
    saved = encode_event(ev)
    return saved.type, saved.data


def load_event(type_name: str, data: bytes) -> Event:
    """Rebuild an event (its class is imported by name when first seen).

    :raises CheckpointError: unknown type or a body that does not fit it.
    """
    return decode_event(SavedEvent(type_name, data), _known)
