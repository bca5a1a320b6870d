"""Helpers for testing code built on plait: span capture, scripted providers, loopback emulators."""

from __future__ import annotations

__all__: list[str] = []
