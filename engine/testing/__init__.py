"""Helpers for testing code built on plait: span capture, scripted providers, loopback emulators."""

from __future__ import annotations

from ._anthropic_files_emu import AnthropicFilesEmulator as AnthropicFilesEmulator
from ._blobs import FileEmulator as FileEmulator
from ._fal_emu import FalStorageEmulator as FalStorageEmulator
from ._gemini_files_emu import GeminiFilesEmulator as GeminiFilesEmulator
from ._openai_files_emu import OpenAIFilesEmulator as OpenAIFilesEmulator
from ._server import LoopbackServer as LoopbackServer
from ._server import Request as Request
from ._server import Response as Response

__all__ = [
    "AnthropicFilesEmulator",
    "FalStorageEmulator",
    "FileEmulator",
    "GeminiFilesEmulator",
    "LoopbackServer",
    "OpenAIFilesEmulator",
    "Request",
    "Response",
]
