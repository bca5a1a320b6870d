"""Tool schemas on the wire: plait's vendor keywords are gone, content refs are described."""

from __future__ import annotations

import importlib

import msgspec
import pydantic
import pytest

from plait import ImageInput, Message, ModelRequest, tool
from plait.providers._schema import wire_parameters


class Page(pydantic.BaseModel):
    scan: ImageInput
    note: str = ""


@tool
async def compare(first: ImageInput, pages: list[Page], caption: str | None = None) -> str:
    """Compare images.

    Args:
        first: The reference picture.
    """
    return "same"


MODULES = ["openai_chat", "openai_responses", "anthropic", "gemini", "bedrock", "ollama"]


def test_tool_keeps_the_marker_the_resolver_needs() -> None:
    assert b"x-plait-content-ref" in msgspec.json.encode(compare.parameters)


@pytest.mark.parametrize("name", MODULES)
def test_wire_schema_has_no_vendor_keywords(name: str) -> None:
    module = importlib.import_module(f"plait.providers.{name}")
    model = {"gemini": "gemini-3-pro-preview", "bedrock": "anthropic.claude-sonnet-4",
             "anthropic": "claude-sonnet-4-5", "ollama": "llama3.2"}.get(name, "gpt-4.1")
    request = ModelRequest(model=model, messages=[Message.user("hi")], tools=[compare.spec])
    wire = msgspec.json.encode(module.build_request(request))
    assert b"x-plait" not in wire
    assert wire.count(b"Id of a content handle (kind: image)") == 2  # first + pages[].scan


def test_existing_description_is_kept_and_extended() -> None:
    cleaned = wire_parameters(compare.parameters)
    first = cleaned["properties"]["first"]
    assert first["description"].startswith("The reference picture. (Id of a content handle")
    assert first["type"] == "string"
    assert cleaned["properties"]["caption"] == compare.parameters["properties"]["caption"]


def test_schemas_without_refs_are_unchanged_and_cached() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    assert wire_parameters(schema) == schema
    assert wire_parameters(dict(schema)) is wire_parameters(schema)
