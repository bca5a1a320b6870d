"""The resolver: a model's argument text in, the tool's keyword arguments out, or a typed error.

Three things can be wrong with what a model sends, and each becomes its own error so the model
can be told precisely what to fix: the text is not a JSON object or does not match the schema
(``InvalidToolArguments``), an id names no handle visible in the run (``UnknownHandle``: a guessed
id or another run's id is refused even when some store holds it), or a handle is of a kind the
parameter does not take (``KindMismatch``). The tool does not run in any of these cases.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from pydantic import ValidationError

from ._content import ContentKind
from ._context import Context
from ._errors import ContentError, InvalidToolArguments, KindMismatch, ToolError, UnknownHandle
from ._inputs import (
    CONTENT_REF_KEY,
    ContentInput,
    ResolveContext,
    accepts_kind,
    content_input_class,
)
from ._scope import HandleScope
from ._tools import Tool

__all__ = ["parse_arguments", "resolve_arguments", "resolve_schema_refs"]

_MAX_PROBLEMS = 8
_MAX_DEPTH = 64
_MAX_VISITS = 100_000
_decoder = msgspec.json.Decoder()


def parse_arguments(arguments: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
    """Parse a tool call's argument text into a JSON object (empty text means ``{}``).

    :raises InvalidToolArguments: the text is not JSON, or not a JSON object.
    """
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if not arguments or not arguments.strip():
        return {}
    try:
        value = _decoder.decode(arguments)
    except (msgspec.DecodeError, RecursionError) as exc:
        detail = str(exc).split("\n", 1)[0][:200]
        raise InvalidToolArguments(f"the arguments are not valid JSON ({detail})") from None
    if not isinstance(value, dict):
        raise InvalidToolArguments(
            f"the arguments must be a JSON object, not {_json_type(value)}"
        )
    return value


def _json_type(value: object) -> str:
    names = {list: "an array", str: "a string", int: "a number", float: "a number",
             bool: "a boolean", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _location(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(arguments)"


def _raise_validation(exc: ValidationError) -> None:
    """Turn pydantic's errors into the most specific plait error, listing every problem."""
    problems: list[str] = []
    kinds: set[str] = set()
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        kinds.add(error["type"])
        loc = error["loc"]
        # pydantic names the internal field of a tagged/function validator; keep the path.
        problems.append(f"{_location(tuple(loc))}: {error['msg']}")
    shown = problems[:_MAX_PROBLEMS]
    if len(problems) > _MAX_PROBLEMS:
        shown.append(f"... and {len(problems) - _MAX_PROBLEMS} more")
    message = "; ".join(shown)
    if "plait_unknown_handle" in kinds:
        raise UnknownHandle(message)
    if "plait_kind_mismatch" in kinds:
        raise KindMismatch(message)
    raise InvalidToolArguments(message)


async def resolve_arguments(tool: Tool, arguments: str | bytes | Mapping[str, Any],
                            ctx: Context | None) -> dict[str, Any]:
    """Validate a call's arguments and replace handle ids by ``ContentInput`` objects.

    :raises InvalidToolArguments: malformed JSON or a schema violation.
    :raises UnknownHandle: an id is not visible in the run (foreign, guessed, or unknown).
    :raises KindMismatch: a handle's kind is not what the parameter takes.
    :raises ContentError: the run's store cannot resolve a visible handle.
    """
    scope = ctx.handles if ctx is not None else HandleScope()
    store = ctx.store if ctx is not None else None
    resolve_ctx = ResolveContext(scope, store)
    parsed = parse_arguments(arguments)
    if tool.args_model is None:
        kwargs = resolve_schema_refs(tool.parameters, parsed, resolve_ctx)
    else:
        try:
            validated = tool.args_model.model_validate(parsed, context=resolve_ctx)
        except ValidationError as exc:
            _raise_validation(exc)
            raise  # unreachable: _raise_validation always raises
        except RecursionError:
            raise InvalidToolArguments("the arguments are nested too deeply") from None
        kwargs = tool.arguments_from(validated)
    if store is not None:
        for content in resolve_ctx.created:
            content.source = await store.resolve(content.handle)
    return kwargs


# --- schema-only tools ----------------------------------------------------------------------------


def resolve_schema_refs(schema: Mapping[str, Any], arguments: dict[str, Any],
                        ctx: ResolveContext) -> dict[str, Any]:
    """Replace content-ref strings in ``arguments`` as the JSON Schema ``schema`` marks them.

    Only content refs are checked here; the rest of the arguments is left to whoever runs the
    tool. Follows ``properties``, ``additionalProperties``, ``items``, ``prefixItems``,
    ``anyOf``/``oneOf``/``allOf`` and local ``$ref``s.

    :raises UnknownHandle: an id is not visible in the run.
    :raises KindMismatch: a handle's kind is not what its parameter takes.
    :raises InvalidToolArguments: a content ref is not a string.
    """
    walker = _Walker(schema, ctx)
    result = walker.walk(schema, arguments, (), 0)
    if walker.problems:
        message = "; ".join(walker.problems[:_MAX_PROBLEMS])
        if walker.unknown:
            raise UnknownHandle(message)
        if walker.mismatch:
            raise KindMismatch(message)
        raise InvalidToolArguments(message)
    return result  # type: ignore[no-any-return]


class _Walker:
    def __init__(self, root: Mapping[str, Any], ctx: ResolveContext) -> None:
        self.root = root
        self.ctx = ctx
        self.problems: list[str] = []
        self.unknown = False
        self.mismatch = False
        self.visits = 0

    def _deref(self, schema: Any) -> Any:
        seen = 0
        while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str):
            ref = schema["$ref"]
            if not ref.startswith("#/") or seen > 16:
                return {}
            target: Any = self.root
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, Mapping) else None
            schema, seen = target, seen + 1
        return schema if isinstance(schema, Mapping) else {}

    def walk(self, schema: Any, value: Any, path: tuple[str, ...], depth: int,
             seen: set[int] | None = None) -> Any:
        """Walk ``value`` against ``schema``.

        ``seen`` holds the schema nodes already applied to this same value (through
        combinators and ``$ref``s): a recursive schema must not be re-entered without the value
        getting smaller, or ``anyOf`` over ``$ref`` cycles explodes exponentially.
        """
        schema = self._deref(schema)
        if depth > _MAX_DEPTH or not schema:
            return value
        seen = set() if seen is None else seen
        if id(schema) in seen:
            return value
        seen.add(id(schema))
        self.visits += 1
        if self.visits > _MAX_VISITS:
            raise InvalidToolArguments("the arguments are too large to check against the schema")
        ref = schema.get(CONTENT_REF_KEY)
        if isinstance(ref, Mapping):
            return self._content(ref, value, path)
        for key in ("allOf", "anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list):
                for branch in branches:
                    value = self.walk(branch, value, path, depth + 1, seen)
        if isinstance(value, dict):
            props = schema.get("properties")
            extra = schema.get("additionalProperties")
            out: dict[str, Any] = {}
            for key, item in value.items():
                sub = props.get(key) if isinstance(props, Mapping) else None
                if sub is None and isinstance(extra, Mapping):
                    sub = extra
                out[key] = self.walk(sub, item, (*path, str(key)), depth + 1)
            return out
        if isinstance(value, list):
            prefix = schema.get("prefixItems")
            items = schema.get("items")
            result = []
            for index, item in enumerate(value):
                positional = isinstance(prefix, list) and index < len(prefix)
                sub = prefix[index] if positional else items
                result.append(self.walk(sub, item, (*path, str(index)), depth + 1))
            return result
        return value

    def _content(self, ref: Mapping[str, Any], value: Any, path: tuple[str, ...]) -> Any:
        where = ".".join(path) or "(arguments)"
        if isinstance(value, ContentInput) or value is None:
            return value
        if not isinstance(value, str):
            self.problems.append(f"{where}: expected a content handle id (a string)")
            return value
        try:
            wanted = ContentKind(ref.get("kind", "document"))
        except ValueError:
            wanted = ContentKind.DOCUMENT
        if value not in self.ctx.scope:
            self.unknown = True
            shown = repr(value if len(value) <= 64 else value[:61] + "...")
            self.problems.append(f"{where}: no content handle {shown} is visible in this run")
            return value
        handle = self.ctx.scope.get(value)
        if not accepts_kind(wanted, handle.kind):
            self.mismatch = True
            self.problems.append(
                f"{where}: content {handle.id!r} is {handle.kind.value} "
                f"({handle.mime_type or 'unknown type'}), but this parameter takes "
                f"{wanted.value} content only"
            )
            return value
        content = content_input_class(wanted)(handle, self.ctx.store)
        self.ctx.created.append(content)
        return content


# Errors the resolver raises on purpose; anything else escaping it is a bug.
RESOLVER_ERRORS: tuple[type[Exception], ...] = (ToolError, ContentError)
