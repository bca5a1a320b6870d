"""Helpers for testing code built on plait: span capture, scripted providers, loopback emulators."""

from __future__ import annotations

from ._spans import SpanCapture as SpanCapture

__all__ = ["SpanCapture"]
