"""The ``plait`` command: ``plait graph module:Workflow`` and ``plait demo``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

import anyio

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


def _demo(trace: bool = False) -> int:
    if trace:
        from .telemetry._cli import traced_demo

        return traced_demo()
    from ._demo import run_demo

    anyio.run(run_demo)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``plait`` console script; returns the exit status."""
    parser = argparse.ArgumentParser(prog="plait", description="plait workflow engine")
    sub = parser.add_subparsers(dest="command", required=True)
    graph = sub.add_parser("graph", help="print a workflow's step graph as Mermaid")
    graph.add_argument("target", help="module:WorkflowClass")
    demo = sub.add_parser("demo", help="run the demo pipeline (no API key needed)")
    demo.add_argument("--trace", action="store_true",
                      help="trace the run with OpenTelemetry and print the span tree")
    args = parser.parse_args(argv)
    if args.command == "graph":
        return _graph(args.target)
    return _demo(trace=args.trace)


if __name__ == "__main__":
    raise SystemExit(main())
