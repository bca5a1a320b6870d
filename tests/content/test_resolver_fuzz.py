"""Fuzzing the resolver: random JSON arguments against random schemas and signatures.

Whatever a model sends, the resolver either returns arguments or raises one of the typed errors
that become a tool-error result; it never crashes with anything else.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, create_model

from plait import (
    AudioInput,
    ContentHandle,
    ContentInput,
    Context,
    FileInput,
    HandleScope,
    ImageInput,
    InvalidToolArguments,
    KindMismatch,
    Tool,
    UnknownHandle,
    resolve_arguments,
)

TYPED = (InvalidToolArguments, UnknownHandle, KindMismatch)
VISIBLE = [ContentHandle("h_img", "image", "image/png"), ContentHandle("h_aud", "audio"),
           ContentHandle("h_pdf", "document", "application/pdf"), ContentHandle("h_cad", "cad")]
IDS = st.sampled_from(["h_img", "h_aud", "h_pdf", "h_cad", "h_foreign", "", "../x"])
KINDS = st.sampled_from(["image", "audio", "video", "document", "cad", "3d", "bogus"])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
    | IDS,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=6) | st.sampled_from(["a", "b", "c"]), inner, max_size=4),
    max_leaves=20,
)

# --- random JSON Schemas (schema-only tools) -------------------------------------------------------

leaf_schemas = st.one_of(
    st.builds(lambda kind: {"type": "string", "x-plait-content-ref": {"kind": kind}}, KINDS),
    st.sampled_from([{"type": "string"}, {"type": "integer"}, {}, {"$ref": "#/$defs/Item"},
                     {"$ref": "#/$defs/missing"}, {"$ref": "http://elsewhere"},
                     {"x-plait-content-ref": "not a dict"}]),
)
schemas = st.recursive(
    leaf_schemas,
    lambda inner: st.one_of(
        st.builds(lambda items: {"type": "array", "items": items}, inner),
        st.builds(lambda props: {"type": "object", "properties": props},
                  st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)),
        st.builds(lambda extra: {"type": "object", "additionalProperties": extra}, inner),
        st.builds(lambda branches: {"anyOf": branches}, st.lists(inner, max_size=3)),
        st.builds(lambda prefix: {"type": "array", "prefixItems": prefix},
                  st.lists(inner, max_size=3)),
    ),
    max_leaves=10,
)


def _ctx() -> Context:
    return Context(run_id="fuzz", handles=HandleScope(VISIBLE))


async def _noop(arguments: dict[str, Any], ctx: Context | None) -> None:
    return None


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(schema=schemas, item=schemas, arguments=json_values)
async def test_random_schemas(schema: dict[str, Any], item: dict[str, Any],
                              arguments: Any) -> None:
    root = {"type": "object", "properties": {"a": schema, "b": item}, "$defs": {"Item": item}}
    raw_tool = Tool.from_schema("fuzz", _noop, parameters=root)
    payload = arguments if isinstance(arguments, dict) else {"a": arguments}
    for sent in (payload, json.dumps(payload), json.dumps(arguments)):
        try:
            result = await resolve_arguments(raw_tool, sent, _ctx())
        except TYPED:
            continue
        assert isinstance(result, dict)


# --- random signatures (@tool functions, validated by pydantic) ------------------------------------

leaf_types = st.sampled_from([int, str, float, bool, ImageInput, AudioInput, FileInput,
                              ContentInput["cad"], Any])


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    def model(fields: dict[str, Any]) -> type[BaseModel]:
        return create_model("Nested", **{k: (v, ...) for k, v in fields.items()})  # type: ignore[call-overload, no-any-return]

    return st.one_of(
        inner.map(lambda t: list[t]),  # type: ignore[valid-type]
        inner.map(lambda t: t | None),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, min_size=1, max_size=3).map(model),
    )


annotations = st.recursive(leaf_types, _nested, max_leaves=6)


def _make_tool(params: dict[str, Any]) -> Tool:
    def fn(**kwargs: Any) -> None:
        return None

    fn.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ann)
        for name, ann in params.items()
    ])
    fn.__annotations__ = dict(params)
    fn.__name__ = "fuzzed"
    return Tool(fn)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(params=st.dictionaries(st.sampled_from(["a", "b", "c"]), annotations, max_size=3),
       arguments=json_values, text=st.text(max_size=30))
async def test_random_signatures(params: dict[str, Any], arguments: Any, text: str) -> None:
    fuzzed = _make_tool(params)
    payload = arguments if isinstance(arguments, dict) else {"a": arguments}
    for sent in (payload, json.dumps(payload), json.dumps(arguments), text, "[" * 5000):
        try:
            result = await resolve_arguments(fuzzed, sent, _ctx())
        except TYPED:
            continue
        assert set(result) == set(params)


async def test_recursive_schema_does_not_explode() -> None:
    """anyOf over a $ref cycle: found by the fuzz above as an exponential walk."""
    node: dict[str, Any] = {"anyOf": [{"$ref": "#/$defs/N"}, {"$ref": "#/$defs/N"},
                                      {"type": "array", "items": {"$ref": "#/$defs/N"}}]}
    root = {"type": "object", "properties": {"a": {"$ref": "#/$defs/N"}}, "$defs": {"N": node}}
    raw_tool = Tool.from_schema("cyclic", _noop, parameters=root)
    nested: Any = "h_img"
    for _ in range(40):
        nested = [nested]
    result = await resolve_arguments(raw_tool, {"a": nested}, _ctx())
    assert result == {"a": nested}
