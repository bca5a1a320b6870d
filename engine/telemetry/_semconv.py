"""GenAI semantic-convention names plait emits, in one place.

The names follow the OpenTelemetry GenAI conventions v1.41 (since moved to their own
repository). Only the OpenTelemetry *API* is a dependency, so the names are spelled here rather
than imported from ``opentelemetry-semantic-conventions``. The deprecated ``gen_ai.system`` is
never emitted: ``gen_ai.provider.name`` replaced it.

``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` switches to what the GenAI
conventions repository changed after v1.41, replacing (not adding to) the v1.41 forms:

* token metrics: the ``gen_ai.client.token.usage`` histogram becomes the counters
  ``gen_ai.client.inference.tokens`` (by ``gen_ai.token.type`` and ``gen_ai.token.modality``),
  ``gen_ai.client.inference.input_tokens_by_cache`` (``gen_ai.token.cache``) and
  ``gen_ai.client.inference.output_tokens_by_phase`` (``gen_ai.token.phase``), whose data points
  partition the totals;
* ``gen_ai.usage.cache_creation.input_tokens`` is spelled ``gen_ai.usage.cache_write.input_tokens``;
* a ``gen_ai.workflow.duration`` histogram per run;
* ``document`` is a message-part modality.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

__all__ = [
    "DURATION_BUCKETS",
    "TOKEN_BUCKETS",
    "TTFC_BUCKETS",
    "latest_experimental",
    "provider_name",
]

# --- attributes ---------------------------------------------------------------------------------
OPERATION_NAME: Final = "gen_ai.operation.name"
PROVIDER_NAME: Final = "gen_ai.provider.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
REQUEST_TOP_P: Final = "gen_ai.request.top_p"
REQUEST_STOP_SEQUENCES: Final = "gen_ai.request.stop_sequences"
REQUEST_SEED: Final = "gen_ai.request.seed"
REQUEST_STREAM: Final = "gen_ai.request.stream"
RESPONSE_ID: Final = "gen_ai.response.id"
RESPONSE_MODEL: Final = "gen_ai.response.model"
RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
USAGE_CACHE_WRITE_INPUT_TOKENS: Final = "gen_ai.usage.cache_write.input_tokens"  # latest
USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
AGENT_NAME: Final = "gen_ai.agent.name"
AGENT_ID: Final = "gen_ai.agent.id"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
WORKFLOW_NAME: Final = "gen_ai.workflow.name"
TOKEN_TYPE: Final = "gen_ai.token.type"
TOKEN_MODALITY: Final = "gen_ai.token.modality"  # latest
TOKEN_CACHE: Final = "gen_ai.token.cache"  # latest
TOKEN_PHASE: Final = "gen_ai.token.phase"  # latest
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
ERROR_TYPE: Final = "error.type"

# plait's own attributes (no convention exists for workflow steps or content handles).
RUN_ID: Final = "plait.run.id"
STEP_NAME: Final = "plait.step.name"
STEP_ATTEMPT: Final = "plait.step.attempt"
CONTENT_OPERATION: Final = "plait.content.operation"
CONTENT_BYTES: Final = "plait.content.bytes"
CONTENT_ACTION: Final = "plait.content.action"  # what a rehost did: inline, uploaded, kept...
CONTENT_HANDLE_ID: Final = "plait.content.handle_id"
CONTENT_MIME_TYPE: Final = "plait.content.mime_type"

# --- operation names ----------------------------------------------------------------------------
OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_INVOKE_WORKFLOW: Final = "invoke_workflow"

# --- metrics ------------------------------------------------------------------------------------
METRIC_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
METRIC_TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.operation.time_to_first_chunk"
METRIC_STEP_DURATION: Final = "plait.step.duration"
# The newer conventions (gen_ai_latest_experimental).
METRIC_INFERENCE_TOKENS: Final = "gen_ai.client.inference.tokens"
METRIC_INPUT_TOKENS_BY_CACHE: Final = "gen_ai.client.inference.input_tokens_by_cache"
METRIC_OUTPUT_TOKENS_BY_PHASE: Final = "gen_ai.client.inference.output_tokens_by_phase"
METRIC_WORKFLOW_DURATION: Final = "gen_ai.workflow.duration"

# Bucket boundaries the conventions recommend for each histogram.
TOKEN_BUCKETS: Final = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                        16777216, 67108864)
DURATION_BUCKETS: Final = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24,
                           20.48, 40.96, 81.92)
TTFC_BUCKETS: Final = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
                       2.5, 5.0, 7.5, 10.0)

# --- well-known provider names ------------------------------------------------------------------
# plait's provider prefixes ("anthropic:claude-...") mapped to the spec's gen_ai.provider.name
# values; an unknown prefix is reported as given (the spec allows custom values).
_PROVIDER_NAMES: Final[dict[str, str]] = {
    "openai": "openai",
    "openai_responses": "openai",
    "openai-responses": "openai",
    "openai_chat": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "google": "gcp.gemini",
    "google-gla": "gcp.gemini",
    "vertex": "gcp.vertex_ai",
    "vertex_ai": "gcp.vertex_ai",
    "google-vertex": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
    "aws.bedrock": "aws.bedrock",
    "azure": "azure.ai.openai",
    "azure_openai": "azure.ai.openai",
    "azure-openai": "azure.ai.openai",
    "azure_inference": "azure.ai.inference",
    "mistral": "mistral_ai",
    "mistral_ai": "mistral_ai",
    "groq": "groq",
    "deepseek": "deepseek",
    "xai": "x_ai",
    "x_ai": "x_ai",
    "grok": "x_ai",
    "perplexity": "perplexity",
    "moonshot": "moonshot_ai",
    "moonshot_ai": "moonshot_ai",
    "cohere": "cohere",
    "watsonx": "ibm.watsonx.ai",
}


def provider_name(provider: str) -> str:
    """The spec's ``gen_ai.provider.name`` for a plait provider id (unknown ids pass through)."""
    key = provider.strip().lower()
    return _PROVIDER_NAMES.get(key, key)


OPT_IN_ENV: Final = "OTEL_SEMCONV_STABILITY_OPT_IN"
LATEST_EXPERIMENTAL: Final = "gen_ai_latest_experimental"


def latest_experimental(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the user opted into the newest experimental GenAI conventions."""
    value = (environ if environ is not None else os.environ).get(OPT_IN_ENV, "")
    return LATEST_EXPERIMENTAL in {v.strip() for v in value.split(",")}
