"""``plait runs ...`` and ``plait worker``: distributed runs from the command line.

The database comes from ``--database`` or ``PLAIT_DATABASE_URL``; ``--app`` and ``--queue``
must match the workers' (defaults: ``plait``, ``plait``).

    plait runs list [--status PENDING] [--limit 20]
    plait runs inspect RUN_ID
    plait runs cancel RUN_ID
    plait runs resume RUN_ID
    plait worker --import myapp.workflows [--concurrency 8]
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import signal
import sys
import threading
from typing import Any

import anyio

from plait import PlaitError

from ._client import RunInfo
from ._runtime import DBOSRuntime

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add the ``runs`` and ``worker`` commands to the ``plait`` command's subparsers."""
    runs = sub.add_parser("runs", help="list, inspect, cancel or resume distributed runs")
    _common(runs)
    actions = runs.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="newest runs first")
    listing.add_argument("--status", help="only runs in this DBOS status (e.g. PENDING)")
    listing.add_argument("--limit", type=int, default=20)
    for name, text in (("inspect", "status and checkpoint of one run"),
                       ("cancel", "stop a run (it stays resumable)"),
                       ("resume", "continue a cancelled run from its last checkpoint")):
        actions.add_parser(name, help=text).add_argument("run_id")
    runs.set_defaults(handler=_runs)

    worker = sub.add_parser("worker", help="serve distributed runs until interrupted")
    _common(worker)
    worker.add_argument("--import", dest="imports", action="append", default=[],
                        metavar="MODULE", help="module defining workflows (repeatable)")
    worker.add_argument("--concurrency", type=int, default=8, help="runs at once")
    worker.set_defaults(handler=_worker)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--database", default=os.environ.get("PLAIT_DATABASE_URL"),
                        help="DBOS system database URL (default: $PLAIT_DATABASE_URL)")
    parser.add_argument("--app", default="plait", help="application name")
    parser.add_argument("--queue", default="plait", help="queue name")


def _runtime(args: argparse.Namespace, **extra: Any) -> DBOSRuntime:
    if not args.database:
        raise SystemExit("plait: give --database or set PLAIT_DATABASE_URL")
    return DBOSRuntime(args.database, app_name=args.app, queue=args.queue, **extra)


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _line(info: RunInfo) -> str:
    steps = ",".join(info.pending_steps) or "-"
    return (f"{info.run_id}  {info.status:<10} {info.checkpoint or '-':<8} "
            f"{_when(info.updated_at)}  {info.workflow or '-'}  pending: {steps}")


def _runs(args: argparse.Namespace) -> int:
    runtime = _runtime(args)

    async def act() -> int:
        try:
            if args.action == "list":
                for info in await runtime.list_runs(status=args.status, limit=args.limit):
                    print(_line(info))
            elif args.action == "inspect":
                info = await runtime.inspect(args.run_id)
                for field in info.__struct_fields__:
                    value = getattr(info, field)
                    if field.endswith("_at"):
                        value = _when(value)
                    print(f"{field}: {value}")
            elif args.action == "cancel":
                await runtime.get_run(args.run_id).cancel()
                print(f"cancelled {args.run_id}")
            else:
                await runtime.resume(args.run_id)
                print(f"resumed {args.run_id}")
            return 0
        except PlaitError as exc:
            print(f"plait runs: {exc}", file=sys.stderr)
            return 1
        finally:
            await runtime.aclose()

    return anyio.run(act)


def _worker(args: argparse.Namespace) -> int:
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: modules in the current directory
    for module in args.imports:
        importlib.import_module(module)
    runtime = _runtime(args, worker_concurrency=args.concurrency)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    runtime.launch()
    print(f"plait worker {runtime.executor_id} serving queue {args.queue!r}", flush=True)
    stop.wait()
    runtime.shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m plait.dbos ...``: the same commands without the core CLI."""
    parser = argparse.ArgumentParser(prog="python -m plait.dbos")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.handler(args))
