"""Content stores (memory, local files, object storage, provider file APIs), checkpoint stores."""

from __future__ import annotations

from ._anthropic_files import AnthropicFilesStore as AnthropicFilesStore
from ._fal import FalStore as FalStore
from ._gemini_files import GeminiFilesStore as GeminiFilesStore
from ._openai_files import OpenAIFilesStore as OpenAIFilesStore
from ._provider_files import ProviderFileStore as ProviderFileStore
from ._s3 import S3Store as S3Store
from .local import LocalFileStore as LocalFileStore
from .memory import MemoryStore as MemoryStore
from .sqlite_checkpoints import SQLiteCheckpointStore as SQLiteCheckpointStore

__all__ = [
    "AnthropicFilesStore",
    "FalStore",
    "GeminiFilesStore",
    "LocalFileStore",
    "MemoryStore",
    "OpenAIFilesStore",
    "ProviderFileStore",
    "S3Store",
    "SQLiteCheckpointStore",
]
