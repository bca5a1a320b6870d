"""Retry policy for a step: how many attempts, how long to wait between them, and for what."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["Retry"]


@dataclass(frozen=True, slots=True)
class Retry:
    """Retry a failing step ``attempts`` times in all, backing off exponentially with jitter.

    The wait before attempt ``k + 1`` is ``backoff * multiplier ** (k - 1)`` seconds, capped at
    ``max_backoff`` and spread by ``jitter`` (a fraction: 0.1 means up to 10% either way) so that
    many runs failing together do not retry in lockstep. Only exceptions that are instances of a
    type in ``on`` are retried; a step timeout counts as ``TimeoutError``.
    """

    attempts: int = 3
    backoff: float = 0.1
    jitter: float = 0.1
    on: tuple[type[BaseException], ...] = field(default=(Exception,))
    multiplier: float = 2.0
    max_backoff: float = 30.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("Retry.attempts must be at least 1")
        if self.backoff < 0 or self.jitter < 0 or self.max_backoff < 0:
            raise ValueError("Retry backoff, jitter and max_backoff must not be negative")
        if not isinstance(self.on, tuple):
            object.__setattr__(self, "on", tuple(self.on))

    def retries(self, exc: BaseException, attempt: int) -> bool:
        """Whether attempt number ``attempt`` (1-based) that raised ``exc`` gets another go."""
        return attempt < self.attempts and isinstance(exc, self.on)

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        base = min(self.backoff * self.multiplier ** (attempt - 1), self.max_backoff)
        if self.jitter:
            base *= 1.0 + random.uniform(-self.jitter, self.jitter)
        return max(base, 0.0)
