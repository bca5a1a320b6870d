"""Helpers for testing code built on plait: span capture, scripted providers, loopback emulators."""

from __future__ import annotations

from ._anthropic_files_emu import AnthropicFilesEmulator as AnthropicFilesEmulator
from ._blobs import FileEmulator as FileEmulator
from ._chat_emulators import OllamaEmulator as OllamaEmulator
from ._chat_emulators import OpenAIChatEmulator as OpenAIChatEmulator
from ._chat_emulators import ScriptedReply as ScriptedReply
from ._emu_anthropic import AnthropicEmulator as AnthropicEmulator
from ._emu_bedrock import BedrockEmulator as BedrockEmulator
from ._emu_gemini import GeminiEmulator as GeminiEmulator
from ._emu_openai_responses import OpenAIResponsesEmulator as OpenAIResponsesEmulator
from ._emulator import Emulator as Emulator
from ._emulator import Received as Received
from ._emulator import rate_limited as rate_limited
from ._emulator import server_error as server_error
from ._emulator import slow as slow
from ._fal_emu import FalStorageEmulator as FalStorageEmulator
from ._gemini_files_emu import GeminiFilesEmulator as GeminiFilesEmulator
from ._openai_files_emu import OpenAIFilesEmulator as OpenAIFilesEmulator
from ._scripted_model import ScriptedModel as ScriptedModel
from ._server import LoopbackServer as LoopbackServer
from ._server import Request as Request
from ._server import Response as Response
from ._spans import SpanCapture as SpanCapture

__all__ = [
    "AnthropicEmulator",
    "AnthropicFilesEmulator",
    "BedrockEmulator",
    "Emulator",
    "FalStorageEmulator",
    "FileEmulator",
    "GeminiEmulator",
    "GeminiFilesEmulator",
    "LoopbackServer",
    "OllamaEmulator",
    "OpenAIChatEmulator",
    "OpenAIFilesEmulator",
    "OpenAIResponsesEmulator",
    "Received",
    "Request",
    "Response",
    "ScriptedModel",
    "ScriptedReply",
    "SpanCapture",
    "rate_limited",
    "server_error",
    "slow",
]
