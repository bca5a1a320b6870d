"""plait: an asynchronous workflow engine for LLM agent pipelines.

The public surface is exactly ``__all__``; everything else lives in private ``_*`` modules.
"""

from __future__ import annotations

from ._agent import Agent as Agent
from ._agent_events import AgentInput as AgentInput
from ._agent_events import AgentResult as AgentResult
from ._agent_events import AgentTextDelta as AgentTextDelta
from ._agent_events import MediaRouted as MediaRouted
from ._agent_events import ModelResponded as ModelResponded
from ._agent_events import Prepared as Prepared
from ._agent_events import Rehosted as Rehosted
from ._agent_events import Serialized as Serialized
from ._agent_events import ToolCallFinished as ToolCallFinished
from ._agent_events import ToolCallsResolved as ToolCallsResolved
from ._agent_events import ToolCallStarted as ToolCallStarted
from ._agent_events import ToolsDispatched as ToolsDispatched
from ._agent_events import TransferProgressed as TransferProgressed
from ._agent_events import TurnFinished as TurnFinished
from ._agent_events import TurnStarted as TurnStarted
from ._agent_workflow import AgentState as AgentState
from ._agent_workflow import AgentWorkflow as AgentWorkflow
from ._checkpoint import CheckpointStore as CheckpointStore
from ._content import ContentHandle as ContentHandle
from ._content import ContentKind as ContentKind
from ._content import InlineSource as InlineSource
from ._content import LocalPathSource as LocalPathSource
from ._content import MediaSource as MediaSource
from ._content import ProviderFileSource as ProviderFileSource
from ._content import UrlSource as UrlSource
from ._context import Context as Context
from ._directory import handle_directory_note as handle_directory_note
from ._errors import AuthenticationError as AuthenticationError
from ._errors import CheckpointError as CheckpointError
from ._errors import ConfigurationError as ConfigurationError
from ._errors import ContentError as ContentError
from ._errors import ContentNotFound as ContentNotFound
from ._errors import ContentRejected as ContentRejected
from ._errors import ContextLengthExceeded as ContextLengthExceeded
from ._errors import ConversationError as ConversationError
from ._errors import InvalidHandleId as InvalidHandleId
from ._errors import InvalidToolArguments as InvalidToolArguments
from ._errors import KindMismatch as KindMismatch
from ._errors import PlaitError as PlaitError
from ._errors import ProviderError as ProviderError
from ._errors import ProviderTimeout as ProviderTimeout
from ._errors import RateLimited as RateLimited
from ._errors import RunFailed as RunFailed
from ._errors import RunNotFound as RunNotFound
from ._errors import StepFailed as StepFailed
from ._errors import StepTimeout as StepTimeout
from ._errors import StreamInterrupted as StreamInterrupted
from ._errors import ToolDefinitionError as ToolDefinitionError
from ._errors import ToolError as ToolError
from ._errors import ToolOutputError as ToolOutputError
from ._errors import ToolTimeout as ToolTimeout
from ._errors import UnknownHandle as UnknownHandle
from ._errors import UnknownProvider as UnknownProvider
from ._errors import WorkflowCancelled as WorkflowCancelled
from ._errors import WorkflowDefinitionError as WorkflowDefinitionError
from ._errors import WorkflowStalled as WorkflowStalled
from ._errors import WorkflowTimeout as WorkflowTimeout
from ._events import Event as Event
from ._events import InputRequired as InputRequired
from ._events import StartEvent as StartEvent
from ._events import StepFinished as StepFinished
from ._events import StepStarted as StepStarted
from ._events import StopEvent as StopEvent
from ._hooks import RunHooks as RunHooks
from ._inputs import AudioInput as AudioInput
from ._inputs import ContentInput as ContentInput
from ._inputs import FileInput as FileInput
from ._inputs import ImageInput as ImageInput
from ._inputs import VideoInput as VideoInput
from ._invoke import ToolInvocation as ToolInvocation
from ._invoke import invoke_tool as invoke_tool
from ._kinds import detect_kind as detect_kind
from ._kinds import detect_mime_type as detect_mime_type
from ._mcp import mcp_tools as mcp_tools
from ._messages import FinishDelta as FinishDelta
from ._messages import GenerationOptions as GenerationOptions
from ._messages import Message as Message
from ._messages import MessagePart as MessagePart
from ._messages import ModelReply as ModelReply
from ._messages import ModelRequest as ModelRequest
from ._messages import ProviderRaw as ProviderRaw
from ._messages import Reasoning as Reasoning
from ._messages import ReasoningDelta as ReasoningDelta
from ._messages import StreamDelta as StreamDelta
from ._messages import TextDelta as TextDelta
from ._messages import ToolCall as ToolCall
from ._messages import ToolCallDelta as ToolCallDelta
from ._messages import ToolCallEnd as ToolCallEnd
from ._messages import ToolCallStart as ToolCallStart
from ._messages import ToolResult as ToolResult
from ._messages import ToolSpec as ToolSpec
from ._messages import Usage as Usage
from ._messages import UsageDelta as UsageDelta
from ._parts import Audio as Audio
from ._parts import ContentPart as ContentPart
from ._parts import Document as Document
from ._parts import Image as Image
from ._parts import MediaPart as MediaPart
from ._parts import Text as Text
from ._parts import Video as Video
from ._progress import TransferProgress as TransferProgress
from ._rehost import MediaMove as MediaMove
from ._rehost import Rehoster as Rehoster
from ._resolver import resolve_arguments as resolve_arguments
from ._retry import Retry as Retry
from ._run import Run as Run
from ._run import RunStarter as RunStarter
from ._scope import HandleScope as HandleScope
from ._step import step as step
from ._store import Body as Body
from ._store import ContentStore as ContentStore
from ._tool_output import ToolOutput as ToolOutput
from ._tool_output import provider_raw as provider_raw
from ._tools import Tool as Tool
from ._tools import tool as tool
from ._workflow import Workflow as Workflow

__version__ = "0.1.0"

# Kept sorted; tests/test_public_api.py checks it against the module namespace.
__all__ = [
    "Agent",
    "AgentInput",
    "AgentResult",
    "AgentState",
    "AgentTextDelta",
    "AgentWorkflow",
    "Audio",
    "AudioInput",
    "AuthenticationError",
    "Body",
    "CheckpointError",
    "CheckpointStore",
    "ConfigurationError",
    "ContentError",
    "ContentHandle",
    "ContentInput",
    "ContentKind",
    "ContentNotFound",
    "ContentPart",
    "ContentRejected",
    "ContentStore",
    "Context",
    "ContextLengthExceeded",
    "ConversationError",
    "Document",
    "Event",
    "FileInput",
    "FinishDelta",
    "GenerationOptions",
    "HandleScope",
    "Image",
    "ImageInput",
    "InlineSource",
    "InputRequired",
    "InvalidHandleId",
    "InvalidToolArguments",
    "KindMismatch",
    "LocalPathSource",
    "MediaMove",
    "MediaPart",
    "MediaRouted",
    "MediaSource",
    "Message",
    "MessagePart",
    "ModelReply",
    "ModelRequest",
    "ModelResponded",
    "PlaitError",
    "Prepared",
    "ProviderError",
    "ProviderFileSource",
    "ProviderRaw",
    "ProviderTimeout",
    "RateLimited",
    "Reasoning",
    "ReasoningDelta",
    "Rehosted",
    "Rehoster",
    "Retry",
    "Run",
    "RunFailed",
    "RunHooks",
    "RunNotFound",
    "RunStarter",
    "Serialized",
    "StartEvent",
    "StepFailed",
    "StepFinished",
    "StepStarted",
    "StepTimeout",
    "StopEvent",
    "StreamDelta",
    "StreamInterrupted",
    "Text",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallFinished",
    "ToolCallStart",
    "ToolCallStarted",
    "ToolCallsResolved",
    "ToolDefinitionError",
    "ToolError",
    "ToolInvocation",
    "ToolOutput",
    "ToolOutputError",
    "ToolResult",
    "ToolSpec",
    "ToolTimeout",
    "ToolsDispatched",
    "TransferProgress",
    "TransferProgressed",
    "TurnFinished",
    "TurnStarted",
    "UnknownHandle",
    "UnknownProvider",
    "UrlSource",
    "Usage",
    "UsageDelta",
    "Video",
    "VideoInput",
    "Workflow",
    "WorkflowCancelled",
    "WorkflowDefinitionError",
    "WorkflowStalled",
    "WorkflowTimeout",
    "detect_kind",
    "detect_mime_type",
    "handle_directory_note",
    "invoke_tool",
    "mcp_tools",
    "provider_raw",
    "resolve_arguments",
    "step",
    "tool",
]
