"""Helpers for testing code built on plait: span capture, scripted providers, loopback emulators."""

from __future__ import annotations

from ._server import LoopbackServer as LoopbackServer
from ._server import Request as Request
from ._server import Response as Response
from ._spans import SpanCapture as SpanCapture

__all__ = ["LoopbackServer", "Request", "Response", "SpanCapture"]
