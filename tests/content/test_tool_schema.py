"""``@tool`` builds name, description and JSON Schema from the signature."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from plait import (
    AudioInput,
    ContentInput,
    ContentKind,
    Context,
    FileInput,
    ImageInput,
    Tool,
    ToolDefinitionError,
    ToolSpec,
    VideoInput,
    tool,
)

IMAGE_REF = {"type": "string", "x-plait-content-ref": {"kind": "image"}}


class Frame(BaseModel):
    image: ImageInput
    overlays: list[ImageInput] = []
    caption: str | None = None


class Scene(BaseModel):
    frames: list[Frame]
    soundtrack: AudioInput | None = None


class RunContext(Context):
    """A user's own context subclass is injected too."""


@tool
async def describe_scene(scene: Scene, ctx: RunContext, clip: VideoInput,
                         attachment: FileInput | None = None, depth: int = 2) -> str:
    """Describe a scene.

    Args:
        scene: The scene to describe.
        clip: The source video,
            cut to the scene.
        depth (int): How much detail.
    """
    return "ok"


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref:
        return schema["$defs"][ref.rsplit("/", 1)[1]]  # type: ignore[no-any-return]
    return node


def test_name_description_and_params() -> None:
    assert describe_scene.name == "describe_scene"
    assert describe_scene.description == "Describe a scene."
    params = describe_scene.parameters
    assert params["type"] == "object"
    assert params["additionalProperties"] is False
    assert set(params["properties"]) == {"scene", "clip", "attachment", "depth"}
    assert "ctx" not in params["properties"]
    assert params["required"] == ["scene", "clip"]
    assert params["properties"]["clip"]["description"] == "The source video, cut to the scene."
    assert params["properties"]["depth"] == {"default": 2, "description": "How much detail.",
                                             "type": "integer"}
    assert describe_scene.context_param == "ctx"


def test_content_refs_everywhere() -> None:
    params = describe_scene.parameters
    clip = dict(params["properties"]["clip"])
    clip.pop("description")
    assert clip == {"type": "string", "x-plait-content-ref": {"kind": "video"}}
    attachment = params["properties"]["attachment"]
    assert {"type": "string", "x-plait-content-ref": {"kind": "document"}} in attachment["anyOf"]
    scene = _resolve(params, params["properties"]["scene"])
    frame = _resolve(params, scene["properties"]["frames"]["items"])
    assert frame["properties"]["image"] == IMAGE_REF
    assert frame["properties"]["overlays"]["items"] == IMAGE_REF
    assert {"type": "string", "x-plait-content-ref": {"kind": "audio"}} in (
        scene["properties"]["soundtrack"]["anyOf"])


def test_content_input_by_kind() -> None:
    assert ContentInput["image"] is ImageInput
    assert ContentInput[ContentKind.DOCUMENT] is FileInput
    cad = ContentInput["cad"]
    assert cad is ContentInput[ContentKind.CAD]
    assert issubclass(cad, ContentInput)

    @tool
    def measure(part: ContentInput[ContentKind.THREE_D], drawing: cad) -> float:  # type: ignore[valid-type]
        """Measure a part."""
        return 1.0

    props = measure.parameters["properties"]
    assert props["part"] == {"type": "string", "x-plait-content-ref": {"kind": "3d"}}
    assert props["drawing"] == {"type": "string", "x-plait-content-ref": {"kind": "cad"}}
    with pytest.raises(ValueError):
        ContentInput["hologram"]


def test_spec_and_options() -> None:
    @tool(name="renamed", description="Custom text.", timeout=3)
    def original(x: Annotated[int, Field(description="a number", ge=0)], json: str = "") -> int:
        return x

    assert isinstance(original, Tool)
    assert original.spec == ToolSpec(name="renamed", description="Custom text.",
                                     parameters=original.parameters)
    assert original.timeout == 3
    assert original.parameters["properties"]["x"] == {
        "description": "a number", "minimum": 0, "type": "integer"}
    assert "json" in original.parameters["properties"]  # no clash with BaseModel.json
    assert original(x=5) == 5  # the function stays callable


def test_sphinx_docstring() -> None:
    @tool
    def f(a: int, b: str) -> None:
        """Do a thing.

        :param a: first value
        :param str b: second value
        :returns: nothing
        """

    assert f.description == "Do a thing."
    assert f.parameters["properties"]["a"]["description"] == "first value"
    assert f.parameters["properties"]["b"]["description"] == "second value"


def test_definition_errors() -> None:
    def star(*args: int) -> None: ...
    def kw(**kwargs: int) -> None: ...
    def pos(a: int, /) -> None: ...
    def unresolved(a: Missing) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    for fn in (star, kw, pos, unresolved):
        with pytest.raises(ToolDefinitionError):
            Tool(fn)
    with pytest.raises(ToolDefinitionError):
        Tool(lambda: None, name="has space")
    with pytest.raises(ToolDefinitionError):
        Tool(lambda: None)  # "<lambda>" is not a valid tool name

    class Opaque:
        pass

    def takes_opaque(a: Opaque) -> None: ...

    with pytest.raises(ToolDefinitionError, match="takes_opaque"):
        Tool(takes_opaque)
