"""Checkpoints: what a run saves after each step, and the store protocol that keeps it.

A checkpoint is the whole resumable state of a run at a consistent moment: the typed state, every
event delivered to a step but not yet handled (with how many attempts at it may have begun), the
fan-in buffers, answers given to ``ctx.wait_for`` and events sent in that nobody has claimed yet.
It is one msgpack document; a store keeps the newest one per run (``seq`` orders them, because
saves from concurrent steps may reach the store out of order).
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol, runtime_checkable

import msgspec

from ._errors import CheckpointError
from ._events import Event, event_type_name

__all__ = [
    "Checkpoint",
    "CheckpointStore",
    "SavedEvent",
    "SavedGroup",
    "SavedJob",
    "decode_checkpoint",
    "decode_event",
    "encode_checkpoint",
    "encode_event",
    "import_event_type",
]

FORMAT_VERSION = 1


@runtime_checkable
class CheckpointStore(Protocol):
    """Where checkpoints live. Implementations must keep only the highest ``seq`` per run."""

    async def save(self, run_id: str, seq: int, workflow: str, status: str,
                   data: bytes) -> None:
        """Store ``data`` as run ``run_id``'s checkpoint unless a newer ``seq`` is stored.

        :raises CheckpointError: the write failed.
        """
        ...

    async def load(self, run_id: str) -> bytes:
        """The newest checkpoint of ``run_id``.

        :raises RunNotFound: no checkpoint for this run.
        """
        ...

    async def delete(self, run_id: str) -> None:
        """Forget ``run_id`` (no error if it is unknown)."""
        ...


class SavedEvent(msgspec.Struct, array_like=True, frozen=True):
    """An event as ``module:QualName`` plus its msgpack body."""

    type: str
    data: bytes


class SavedJob(msgspec.Struct, array_like=True):
    """An event (or a fan-in batch) delivered to a step and not yet handled."""

    id: int
    step: str
    events: list[SavedEvent]
    batch: bool
    group: int
    attempt: int
    answers: list[SavedEvent]


class SavedGroup(msgspec.Struct, array_like=True):
    """A fan-out whose branches are still running, with what its fan-ins collected so far."""

    id: int
    parent: int
    pending: int
    default: str | None
    buffers: dict[str, list[SavedEvent]]


class Checkpoint(msgspec.Struct):
    """One run's saved state (``status`` is "running", "done" or "failed")."""

    workflow: str
    run_id: str
    seq: int
    status: str
    next_id: int
    state: bytes | None = None
    jobs: list[SavedJob] = []
    groups: list[SavedGroup] = []
    joins: dict[str, list[SavedEvent]] = {}
    mailbox: list[SavedEvent] = []
    result: SavedEvent | None = None
    error: str | None = None
    version: int = FORMAT_VERSION


_encoder = msgspec.msgpack.Encoder()
_checkpoint_decoder = msgspec.msgpack.Decoder(Checkpoint)


def encode_event(ev: Event) -> SavedEvent:
    """Encode one event for a checkpoint.

    :raises CheckpointError: a field cannot be encoded as msgpack.
    """
    try:
        return SavedEvent(event_type_name(type(ev)), _encoder.encode(ev))
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"cannot checkpoint {type(ev).__name__}: {exc}") from exc


def import_event_type(name: str, known: dict[str, type[Event]]) -> type[Event]:
    """Find the event class saved as ``name``: among ``known`` first, else by importing it.

    :raises CheckpointError: the class cannot be found.
    """
    tp = known.get(name)
    if tp is not None:
        return tp
    module_name, _, qualname = name.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise CheckpointError(f"checkpoint names event type {name!r}, which is not importable")\
            from exc
    if not (isinstance(obj, type) and issubclass(obj, Event)):
        raise CheckpointError(f"checkpoint names {name!r}, which is not an Event subclass")
    known[name] = obj
    return obj


def decode_event(saved: SavedEvent, known: dict[str, type[Event]]) -> Event:
    """Decode one saved event.

    :raises CheckpointError: unknown type or a body that does not match it.
    """
    tp = import_event_type(saved.type, known)
    try:
        return msgspec.msgpack.decode(saved.data, type=tp)
    except msgspec.DecodeError as exc:
        raise CheckpointError(f"cannot decode saved {saved.type}: {exc}") from exc


def encode_checkpoint(cp: Checkpoint) -> bytes:
    """Serialize a checkpoint (msgpack)."""
    return _encoder.encode(cp)


def decode_checkpoint(data: bytes) -> Checkpoint:
    """Parse a checkpoint.

    :raises CheckpointError: corrupt data or an unknown format version.
    """
    try:
        cp = _checkpoint_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise CheckpointError(f"corrupt checkpoint: {exc}") from exc
    if cp.version != FORMAT_VERSION:
        raise CheckpointError(f"checkpoint format {cp.version} is not supported")
    return cp


def encode_state(state: Any) -> bytes:
    """Encode run state: a msgspec Struct, a pydantic model, or plain msgpack-able data.

    :raises CheckpointError: the state cannot be encoded.
    """
    dump = getattr(state, "model_dump", None)
    try:
        if dump is not None:
            return _encoder.encode(dump(mode="json"))
        return _encoder.encode(state)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"cannot checkpoint run state: {exc}") from exc


def decode_state(data: bytes, state_type: type[Any] | None) -> Any:
    """Rebuild run state saved by ``encode_state``.

    :raises CheckpointError: the saved state does not fit ``state_type``.
    """
    try:
        if state_type is None:
            return msgspec.msgpack.decode(data)
        validate = getattr(state_type, "model_validate", None)
        if validate is not None:
            return validate(msgspec.msgpack.decode(data))
        return msgspec.msgpack.decode(data, type=state_type)
    except Exception as exc:  # pydantic and msgspec raise different validation errors
        raise CheckpointError(f"cannot restore run state: {exc}") from exc
