"""Per-run context handed to every step (skeleton: the engine fills in the run machinery).

Contract other parts rely on: ``ctx.run_id``, ``ctx.handles`` (a ``HandleScope``) and
``ctx.store`` (the run's ``ContentStore`` or ``None``).
"""

from __future__ import annotations

from ._scope import HandleScope
from ._store import ContentStore

__all__ = ["Context"]


class Context:
    """What a step can see and do during one run."""

    def __init__(self, *, run_id: str, store: ContentStore | None = None,
                 handles: HandleScope | None = None) -> None:
        self.run_id = run_id
        self.store = store
        self.handles = handles if handles is not None else HandleScope()
