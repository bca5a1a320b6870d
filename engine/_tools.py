"""``@tool`` and ``Tool``: a Python function as something a model can call.

The JSON Schema comes from the signature through pydantic, so whatever pydantic validates
(nested models, lists, unions, ``Annotated[..., Field(...)]``, content parameters) is what the
model is told. A parameter annotated with ``plait.Context`` (or a subclass) receives the run's
context and is not shown to the model.
"""

from __future__ import annotations

import inspect
import re
import sys
import typing
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, overload

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import GenerateJsonSchema

from ._context import Context
from ._errors import ToolDefinitionError
from ._messages import ToolSpec

__all__ = ["Tool", "tool"]

_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
_SECTION_RE = re.compile(r"^(Args|Arguments|Parameters|Params|Returns|Raises|Yields|Examples?)"
                         r":\s*$")
_ARG_SECTIONS = ("Args", "Arguments", "Parameters", "Params")
_GOOGLE_PARAM_RE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM_RE = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+):\s*(.*)$")

SchemaCall = Callable[[dict[str, Any], Context | None], Awaitable[Any]]


class _CompactSchema(GenerateJsonSchema):
    """Pydantic's schema without per-field titles: noise to a model, tokens on every turn."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a docstring into the description and per-parameter text (Google or Sphinx style)."""
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    param_indent: int | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        header = _SECTION_RE.match(stripped)
        sphinx = _SPHINX_PARAM_RE.match(stripped)
        if header and indent == 0:
            section, current, param_indent = header.group(1), None, None
        elif sphinx:
            section, current = "sphinx", sphinx.group(1)
            params[current] = sphinx.group(2).strip()
        elif stripped.startswith(":"):  # :returns:, :raises: are not for the model
            section, current = "sphinx", None
        elif section is None:
            description.append(line)
        elif (section in _ARG_SECTIONS and stripped
              and (param_indent is None or indent <= param_indent)
              and (google := _GOOGLE_PARAM_RE.match(stripped))):
            param_indent, current = indent, google.group(1).lstrip("*")
            params[current] = google.group(2).strip()
        elif current is not None and stripped:
            params[current] = f"{params[current]} {stripped}".strip()
    return "\n".join(description).strip(), params


def _is_context(annotation: object) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Context)


class Tool:
    """A callable the model can invoke: ``name``, ``description``, ``parameters`` (JSON Schema).

    Build one with ``@tool`` or ``Tool(fn)``; ``Tool.from_schema`` wraps an already-described
    callable (an MCP server's tool, say) whose arguments arrive as one JSON object.
    """

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None,
                 description: str | None = None, timeout: float | None = None,
                 _localns: dict[str, Any] | None = None) -> None:
        """Describe ``fn`` as a tool.

        :raises ToolDefinitionError: the name is not ``[A-Za-z0-9_-]{1,64}``, the function takes
            ``*args``/``**kwargs`` or positional-only parameters, or its annotations cannot be
            resolved.
        """
        self.fn = fn
        self.name = _check_name(name or str(getattr(fn, "__name__", "")))
        self.timeout = timeout
        self.is_async = inspect.iscoroutinefunction(fn)
        doc_text, param_docs = _parse_docstring(inspect.getdoc(fn) or "")
        self.description = description if description is not None else doc_text
        self.context_param: str | None = None
        self._aliases: dict[str, str] = {}  # internal field name -> parameter name
        if _localns is None:  # the caller's locals resolve annotations of nested functions
            _localns = dict(sys._getframe(1).f_locals)
        self.args_model: type[BaseModel] | None = self._build_model(param_docs, _localns)
        self.parameters = _compact(self.args_model.model_json_schema(
            by_alias=True, schema_generator=_CompactSchema))
        self._schema_call: SchemaCall | None = None

    @classmethod
    def from_schema(cls, name: str, call: SchemaCall, *, description: str = "",
                    parameters: dict[str, Any] | None = None,
                    timeout: float | None = None) -> Tool:
        """A tool whose arguments are validated by whoever runs it (e.g. an MCP server).

        ``call(arguments, ctx)`` receives the parsed JSON object, with content-ref strings
        (``x-plait-content-ref`` in ``parameters``) replaced by ``ContentInput`` objects.

        :raises ToolDefinitionError: the name is not ``[A-Za-z0-9_-]{1,64}``.
        """
        self = cls.__new__(cls)
        self.fn = call
        self.name = _check_name(name)
        self.timeout = timeout
        self.is_async = True
        self.description = description
        self.context_param = None
        self._aliases = {}
        self.args_model = None
        self.parameters = parameters or {"type": "object", "properties": {}}
        self._schema_call = call
        return self

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (no validation, no resolution)."""
        return self.fn(*args, **kwargs)

    @property
    def spec(self) -> ToolSpec:
        """The tool as the model sees it."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def _build_model(self, param_docs: dict[str, str],
                     localns: dict[str, Any]) -> type[BaseModel]:
        try:
            hints = typing.get_type_hints(self.fn, localns=localns, include_extras=True)
            signature = inspect.signature(self.fn)
        except (NameError, TypeError, ValueError) as exc:
            raise ToolDefinitionError(
                f"tool {self.name!r}: cannot read its signature or annotations ({exc})"
            ) from None
        fields: dict[str, Any] = {}
        for index, param in enumerate(signature.parameters.values()):
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
                raise ToolDefinitionError(
                    f"tool {self.name!r}: parameter {param.name!r} must be a named parameter "
                    "(no *args, **kwargs or positional-only parameters)"
                )
            annotation = hints.get(param.name, Any)
            if _is_context(annotation):
                self.context_param = param.name
                continue
            default = ... if param.default is param.empty else param.default
            # Aliased internal names: a parameter called ``json`` or ``_x`` must not collide
            # with BaseModel attributes or private-attribute rules.
            internal = f"p{index}"
            self._aliases[internal] = param.name
            doc = param_docs.get(param.name)
            field = (Field(default, alias=param.name, description=doc) if doc
                     else Field(default, alias=param.name))
            fields[internal] = (annotation, field)
        try:
            return create_model(
                f"{self.name}_arguments",
                __config__=ConfigDict(extra="forbid", populate_by_name=False),
                **fields,
            )
        except Exception as exc:  # noqa: BLE001 - pydantic rejects what it cannot validate
            raise ToolDefinitionError(
                f"tool {self.name!r}: cannot build an argument schema: {exc}"
            ) from None

    def arguments_from(self, validated: BaseModel) -> dict[str, Any]:
        """Keyword arguments for the function from a validated arguments model."""
        return {self._aliases[key]: getattr(validated, key) for key in self._aliases}

    async def run(self, arguments: dict[str, Any], ctx: Context | None) -> Any:
        """Run the tool on already-resolved arguments; sync functions run in a worker thread."""
        if self._schema_call is not None:
            return await self._schema_call(arguments, ctx)
        if self.context_param is not None:
            arguments = {**arguments, self.context_param: ctx}
        if self.is_async:
            return await self.fn(**arguments)
        return await anyio.to_thread.run_sync(partial(self.fn, **arguments),
                                              abandon_on_cancel=True)


def _check_name(name: str) -> str:
    if not _NAME_RE.fullmatch(name):
        raise ToolDefinitionError(
            f"tool name {name!r} is not valid: use 1-64 characters of [A-Za-z0-9_-]"
        )
    return name


def _compact(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop model titles (the model sees the tool name already)."""
    schema.pop("title", None)
    for definition in schema.get("$defs", {}).values():
        if isinstance(definition, dict):
            definition.pop("title", None)
    return schema


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(*, name: str | None = None, description: str | None = None,
         timeout: float | None = None) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(fn: Callable[..., Any] | None = None, /, *, name: str | None = None,
         description: str | None = None,
         timeout: float | None = None) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a ``Tool`` from a sync or async function: ``@tool`` or ``@tool(name=..., timeout=...)``.

    :raises ToolDefinitionError: the function cannot be described as a tool.
    """
    if fn is not None:
        return Tool(fn, name=name, description=description, timeout=timeout,
                    _localns=dict(sys._getframe(1).f_locals))

    def wrap(inner: Callable[..., Any]) -> Tool:
        return Tool(inner, name=name, description=description, timeout=timeout,
                    _localns=dict(sys._getframe(1).f_locals))

    return wrap
