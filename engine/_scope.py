"""The handles visible to one run.

Scope is the security boundary for content: a model may only name handles its run can see. A
guessed id, or a real id from another run, is refused here even if some store holds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ._content import ContentHandle
from ._errors import UnknownHandle

__all__ = ["HandleScope"]


class HandleScope:
    """An ordered set of handles, looked up by id."""

    __slots__ = ("_by_id",)

    def __init__(self, handles: Iterable[ContentHandle] = ()) -> None:
        self._by_id: dict[str, ContentHandle] = {h.id: h for h in handles}

    def add(self, handle: ContentHandle) -> ContentHandle:
        """Make ``handle`` visible (replacing older metadata for the same id)."""
        self._by_id[handle.id] = handle
        return handle

    def get(self, handle_id: str) -> ContentHandle:
        """Return the visible handle with this id.

        :raises UnknownHandle: no handle with this id is visible in the run.
        """
        try:
            return self._by_id[handle_id]
        except KeyError:
            raise UnknownHandle(
                f"no content handle {handle_id!r} is visible in this run"
            ) from None

    def __contains__(self, handle_id: object) -> bool:
        return handle_id in self._by_id

    def __iter__(self) -> Iterator[ContentHandle]:
        return iter(list(self._by_id.values()))

    def __len__(self) -> int:
        return len(self._by_id)

    def ids(self) -> list[str]:
        """The visible ids, in the order they became visible."""
        return list(self._by_id)
