"""Progress of long byte transfers (uploads to provider file stores, rehosting).

A plain event struct and a callback type, so a store can report progress without knowing who
listens: the agent workflow turns these into stream events and the CLI into a progress bar.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import TypeAlias

import msgspec

from ._aio import closing

__all__ = ["ProgressCallback", "TransferProgress", "count_progress"]


class TransferProgress(msgspec.Struct, frozen=True):
    """``done`` of ``total`` bytes (``total`` is ``None`` when unknown) moved towards ``provider``.

    ``handle_id`` names the content; ``phase`` is ``"upload"``, ``"download"`` or ``"fetch"``;
    ``finished`` is true on the last report of a transfer.
    """

    handle_id: str
    provider: str
    done: int
    total: int | None = None
    phase: str = "upload"
    finished: bool = False


ProgressCallback: TypeAlias = Callable[[TransferProgress], None]
"""Called with each progress report; must be cheap (it runs on the transfer's task)."""

def _step(total: int | None) -> int:
    """Bytes between reports: about 2% of the total (64 KiB to 4 MiB), 1 MiB when unknown.

    Enough for a smooth bar, few enough to cost nothing.
    """
    if total is None:
        return 1 << 20
    return max(64 << 10, min(4 << 20, total // 50))


async def count_progress(chunks: AsyncIterable[bytes], callback: ProgressCallback | None, *,
                         handle_id: str, provider: str, total: int | None,
                         phase: str = "upload") -> AsyncIterator[bytes]:
    """Pass ``chunks`` through unchanged, reporting progress to ``callback`` along the way."""
    async with closing(chunks) as source:
        if callback is None:
            async for chunk in source:
                yield chunk
            return
        done = 0
        last = 0
        every = _step(total)
        callback(TransferProgress(handle_id, provider, 0, total, phase))
        async for chunk in source:
            done += len(chunk)
            if done - last >= every:
                last = done
                callback(TransferProgress(handle_id, provider, done, total, phase))
            yield chunk
        callback(TransferProgress(handle_id, provider, done, total, phase, finished=True))
