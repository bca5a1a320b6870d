"""The ``plait`` command: ``graph`` (Mermaid), ``demo`` (the multi-provider pipeline;
``--engine`` for the engine-only demo) and ``wire`` (what a provider would receive)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _load_workflow(target: str) -> type:
    from ._workflow import Workflow

    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise SystemExit(f"plait graph: expected module:WorkflowClass, got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: modules in the current directory
    try:
        obj: object = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise SystemExit(f"plait graph: cannot load {target!r}: {exc}") from None
    if not (isinstance(obj, type) and issubclass(obj, Workflow)):
        raise SystemExit(f"plait graph: {target!r} is not a Workflow subclass")
    return obj


def _graph(target: str) -> int:
    from ._errors import WorkflowDefinitionError

    wf = _load_workflow(target)
    try:
        sys.stdout.write(wf.mermaid())  # type: ignore[attr-defined]
    except WorkflowDefinitionError as exc:
        raise SystemExit(f"plait graph: {exc}") from None
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``plait`` console script; returns the exit status."""
    parser = argparse.ArgumentParser(prog="plait", description="plait workflow engine")
    sub = parser.add_subparsers(dest="command", required=True)
    graph = sub.add_parser("graph", help="print a workflow's step graph as Mermaid")
    graph.add_argument("target", help="module:WorkflowClass")
    from ._agent_cli import add_subcommands

    handlers = add_subcommands(sub)  # demo (multi-provider pipeline) and wire
    try:  # `plait runs ...` and `plait worker` when the dbos extra is installed
        from plait.dbos._cli import register
    except ImportError:
        pass
    else:
        register(sub)
    args = parser.parse_args(argv)
    if hasattr(args, "handler"):
        return int(args.handler(args))
    if args.command == "graph":
        return _graph(args.target)
    return handlers[args.command](args)


if __name__ == "__main__":
    raise SystemExit(main())
