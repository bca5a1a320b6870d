"""Provider wire APIs: one module per API, each a pair of pure translations plus capabilities.

Entry point: ``connect("provider:model") -> Provider`` (``complete``, ``stream``, ``aclose``).
Building blocks for wire modules: ``Capabilities`` / ``CapabilityTable``, ``place_media`` and
``pair_tool_results`` (where parts go), ``preflight`` (limits before HTTP), ``MediaEncoder`` /
``EncodeCache`` / ``encode_body`` (encode once, stream big bodies), ``Transport`` (HTTP, retries,
typed errors), ``register`` / ``ProviderSpec`` (the registry), ``accumulate`` (deltas → reply).
"""

from __future__ import annotations

from ._accumulate import Accumulator as Accumulator
from ._accumulate import accumulate as accumulate
from ._body import EncodeCache as EncodeCache
from ._body import MediaEncoder as MediaEncoder
from ._body import MediaRef as MediaRef
from ._body import StreamedBody as StreamedBody
from ._body import encode_body as encode_body
from ._capabilities import Capabilities as Capabilities
from ._capabilities import CapabilityTable as CapabilityTable
from ._capabilities import Placement as Placement
from ._client import Provider as Provider
from ._client import connect as connect
from ._placement import place_media as place_media
from ._preflight import Uploader as Uploader
from ._preflight import Violation as Violation
from ._preflight import find_violations as find_violations
from ._preflight import preflight as preflight
from ._registry import ProviderSpec as ProviderSpec
from ._registry import WireModule as WireModule
from ._registry import bearer_auth as bearer_auth
from ._registry import capabilities_for as capabilities_for
from ._registry import header_auth as header_auth
from ._registry import provider_names as provider_names
from ._registry import register as register
from ._transport import RetryPolicy as RetryPolicy
from ._transport import Timeouts as Timeouts
from ._transport import Transport as Transport
from ._turns import pair_tool_results as pair_tool_results

__all__ = [
    "Accumulator",
    "Capabilities",
    "CapabilityTable",
    "EncodeCache",
    "MediaEncoder",
    "MediaRef",
    "Placement",
    "Provider",
    "ProviderSpec",
    "RetryPolicy",
    "StreamedBody",
    "Timeouts",
    "Transport",
    "Uploader",
    "Violation",
    "WireModule",
    "accumulate",
    "bearer_auth",
    "capabilities_for",
    "connect",
    "encode_body",
    "find_violations",
    "header_auth",
    "pair_tool_results",
    "place_media",
    "preflight",
    "provider_names",
    "register",
]
