"""Provider wire APIs: one module per API, each a pair of pure translations plus capabilities."""

from __future__ import annotations

__all__: list[str] = []
