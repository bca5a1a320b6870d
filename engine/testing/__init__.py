"""Helpers for testing code built on plait: span capture, scripted providers, loopback emulators."""

from __future__ import annotations

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
from ._server import LoopbackServer as LoopbackServer
from ._server import Request as Request
from ._server import Response as Response
from ._spans import SpanCapture as SpanCapture

__all__ = [
    "AnthropicEmulator",
    "BedrockEmulator",
    "Emulator",
    "GeminiEmulator",
    "LoopbackServer",
    "OllamaEmulator",
    "OpenAIChatEmulator",
    "OpenAIResponsesEmulator",
    "Received",
    "Request",
    "Response",
    "ScriptedReply",
    "SpanCapture",
    "rate_limited",
    "server_error",
    "slow",
]
