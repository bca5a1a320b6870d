"""Content stores (memory, local files, object storage, provider file APIs), checkpoint stores."""

from __future__ import annotations

__all__: list[str] = []
