"""Every exception plait raises.

One module so that callers can see the whole family at once and catch at the depth they need:
``PlaitError`` for anything of ours, a branch (``ContentError``, ``ToolError``, ``ProviderError``)
for one concern, or a leaf. Messages never contain secrets or raw media bytes.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "CheckpointError",
    "ConfigurationError",
    "ContentError",
    "ContentNotFound",
    "ContentRejected",
    "ContextLengthExceeded",
    "ConversationError",
    "InvalidHandleId",
    "InvalidToolArguments",
    "KindMismatch",
    "PlaitError",
    "ProviderError",
    "ProviderTimeout",
    "RateLimited",
    "RunFailed",
    "RunNotFound",
    "StepFailed",
    "StepTimeout",
    "StreamInterrupted",
    "ToolDefinitionError",
    "ToolError",
    "ToolOutputError",
    "ToolTimeout",
    "UnknownHandle",
    "UnknownProvider",
    "WorkflowCancelled",
    "WorkflowDefinitionError",
    "WorkflowStalled",
    "WorkflowTimeout",
]


class PlaitError(Exception):
    """Base of every error plait raises on purpose."""


# --- engine -------------------------------------------------------------------------------------


class WorkflowDefinitionError(PlaitError, TypeError):
    """A workflow class is malformed; raised when its ``class`` statement executes."""


class StepFailed(PlaitError):
    """A step raised; the original exception is kept as ``__cause__``."""

    def __init__(self, step: str, attempt: int, message: str | None = None) -> None:
        self.step = step
        self.attempt = attempt
        super().__init__(message or f"step {step!r} failed on attempt {attempt}")


class StepTimeout(PlaitError, TimeoutError):
    """A step exceeded its ``timeout`` on every attempt its retry policy allowed."""

    def __init__(self, step: str, timeout: float, attempts: int) -> None:
        self.step = step
        self.timeout = timeout
        self.attempts = attempts
        super().__init__(
            f"step {step!r} timed out after {timeout:g}s ({attempts} attempt(s))"
        )


class WorkflowTimeout(PlaitError, TimeoutError):
    """The whole run exceeded the workflow's ``timeout``."""

    def __init__(self, workflow: str, timeout: float) -> None:
        self.workflow = workflow
        self.timeout = timeout
        super().__init__(f"workflow {workflow!r} timed out after {timeout:g}s")


class WorkflowCancelled(PlaitError):
    """The run was cancelled by its caller before it finished."""


class WorkflowStalled(PlaitError, RuntimeError):
    """Nothing is running or pending, yet no step emitted a stop event (the run cannot end)."""


class RunFailed(PlaitError):
    """A run executed by another process failed; ``error_type`` names the original exception.

    Raised on the caller's side of a distributed runtime, where the original exception object
    (and its traceback) stayed in the worker process.
    """

    def __init__(self, run_id: str, error_type: str, message: str) -> None:
        self.run_id = run_id
        self.error_type = error_type
        self.message = message
        super().__init__(f"run {run_id} failed: {error_type}: {message}")

    def __reduce__(self) -> tuple[type[RunFailed], tuple[str, str, str]]:
        return (RunFailed, (self.run_id, self.error_type, self.message))


class CheckpointError(PlaitError):
    """A checkpoint could not be written, read or decoded."""


class RunNotFound(CheckpointError, KeyError):
    """No checkpoint exists for the requested run id."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "run not found"


# --- content ------------------------------------------------------------------------------------


class ContentError(PlaitError):
    """Base of errors about stored content and content handles."""


class ContentNotFound(ContentError, KeyError):
    """The handle names no content in this store (deleted, expired, or never stored)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "content not found"


class InvalidHandleId(ContentError, ValueError):
    """A handle id is malformed or hostile (path separators, traversal, wrong alphabet)."""


class ContentRejected(ContentError, ValueError):
    """A part cannot be sent to a provider: MIME type, size or count outside its limits."""

    def __init__(self, message: str, *, provider: str | None = None, part: str | None = None,
                 limit: str | None = None) -> None:
        self.provider = provider
        self.part = part
        self.limit = limit
        super().__init__(message)


# --- tools --------------------------------------------------------------------------------------


class ConversationError(PlaitError, ValueError):
    """A conversation breaks a rule every provider enforces (e.g. a tool call left unanswered)."""


class ToolError(PlaitError):
    """Base of errors raised while preparing or running a tool call.

    Argument errors (the subclasses below) are turned into a tool-error result that the model
    sees; the tool itself does not run.
    """


class InvalidToolArguments(ToolError, ValueError):
    """The model's arguments are not valid JSON or do not match the tool's schema."""


class UnknownHandle(ToolError, LookupError):
    """A content-handle id in the arguments is not visible in this run."""


class KindMismatch(ToolError, TypeError):
    """A content handle is of a kind the parameter does not accept."""


class ToolOutputError(ToolError, TypeError):
    """A tool returned something plait cannot turn into a result for the model."""


class ToolDefinitionError(ToolError, TypeError):
    """A function cannot become a tool (bad name, ``*args``, unresolvable annotations...)."""


class ToolTimeout(ToolError, TimeoutError):
    """A tool call ran past its timeout and was cancelled."""

    def __init__(self, tool: str, timeout: float) -> None:
        self.tool = tool
        self.timeout = timeout
        super().__init__(f"tool {tool!r} timed out after {timeout:g}s")


# --- providers ----------------------------------------------------------------------------------


class ProviderError(PlaitError):
    """A provider answered with an error, or the exchange with it failed."""

    def __init__(self, message: str, *, provider: str, status: int | None = None,
                 request_id: str | None = None) -> None:
        self.provider = provider
        self.status = status
        self.request_id = request_id
        self.message = message
        detail = f"{provider}"
        if status is not None:
            detail += f" HTTP {status}"
        if request_id:
            detail += f" (request {request_id})"
        super().__init__(f"{detail}: {message}")


class RateLimited(ProviderError):
    """HTTP 429 (or the provider's equivalent); ``retry_after`` is in seconds when known."""

    def __init__(self, message: str, *, provider: str, status: int | None = 429,
                 request_id: str | None = None, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message, provider=provider, status=status, request_id=request_id)


class AuthenticationError(ProviderError):
    """The provider refused the credentials (401/403). The key itself is never included."""


class ContextLengthExceeded(ProviderError):
    """The request does not fit the model's context window."""


class ConfigurationError(PlaitError, ValueError):
    """A setting is malformed, e.g. a model string that is not ``"provider:model"``."""


class UnknownProvider(ConfigurationError, LookupError):
    """No provider is registered under the requested name; the message lists the known ones."""


class StreamInterrupted(ProviderError):
    """A streamed response ended before its terminal event."""


class ProviderTimeout(ProviderError, TimeoutError):
    """The exchange with a provider exceeded its connect, read or total timeout on every attempt."""
