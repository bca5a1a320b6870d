"""Content stores (memory, local files, object storage, provider file APIs) and checkpoint stores."""

from __future__ import annotations

__all__: list[str] = []
