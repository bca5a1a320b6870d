"""The provider layer's structlog logger (one name, so users can filter it)."""

from __future__ import annotations

import structlog

__all__ = ["logger"]

logger = structlog.get_logger("plait.providers")
