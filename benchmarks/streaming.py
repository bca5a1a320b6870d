"""Streaming a 1 GiB file through LocalFileStore: throughput against plain reads, and memory.

In one run: write a 1 GiB file into a ``LocalFileStore``; read it with plain chunked reads (the
peer figure: ``open(..., buffering=0).read(chunk)`` in a loop, what a synchronous program does)
and through ``LocalFileStore.fetch_stream``; stream-copy it into a second ``LocalFileStore``
(``put`` fed by ``fetch_stream``, fsync included). Raw and store reads alternate and the best
pass of each counts, so a noisy neighbour on a shared machine hurts both alike. Peak RSS growth
is measured per phase from ``VmHWM`` (reset through ``/proc/self/clear_refs`` where allowed).

Goal: store read >= 0.8x raw read; peak RSS growth <= 32 MiB.

    python benchmarks/streaming.py [--quick] [--dir /tmp] [--size-mib 1024]

The last line is one JSON object: store_read_mb_s, raw_read_mb_s, copy_mb_s,
peak_rss_growth_mb (MiB), bytes_streamed (bytes per streamed pass).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable

import anyio

from plait import ContentHandle
from plait.stores import LocalFileStore

MIB = 1 << 20


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


class PeakTracker:
    """Largest RSS rise above the level at the start of any measured phase, in MiB."""

    def __init__(self) -> None:
        self.growth_mib = 0.0
        self._start_kib = 0

    def start(self) -> None:
        _reset_peak()
        self._start_kib = _status_kib("VmRSS") or 0
        if self._start_kib == 0:  # no /proc: fall back to the process-wide high-water mark
            self._start_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    def stop(self) -> None:
        peak = _status_kib("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        self.growth_mib = max(self.growth_mib, (peak - self._start_kib) / 1024)


def write_file(path: str, size: int) -> None:
    block = os.urandom(4 * MIB)
    with open(path, "wb", buffering=0) as out:
        left = size
        while left > 0:
            out.write(block[: min(left, len(block))])
            left -= len(block)


def raw_read(path: str, chunk: int) -> int:
    total = 0
    with open(path, "rb", buffering=0) as source:
        while data := source.read(chunk):
            total += len(data)
    return total


async def store_read(store: LocalFileStore, handle: ContentHandle) -> int:
    total = 0
    async for data in store.fetch_stream(handle):
        total += len(data)
    return total


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # all threads of the process
    return usage.ru_utime + usage.ru_stime


async def timed(fn: Callable[[], Awaitable[int]],
                tracker: PeakTracker) -> tuple[float, int, float]:
    """(MB/s, bytes, CPU seconds per GiB): CPU time shows cost even when the machine is busy."""
    tracker.start()
    cpu = _cpu_seconds()
    start = time.perf_counter()
    total = await fn()
    elapsed = time.perf_counter() - start
    cpu_per_gib = (_cpu_seconds() - cpu) / (total / (1 << 30))
    tracker.stop()
    return total / elapsed / 1e6, total, cpu_per_gib


async def run(args: argparse.Namespace) -> dict[str, float | int]:
    size = args.size_mib * MIB
    passes = 2 if args.quick else 4
    tmp = tempfile.mkdtemp(prefix="plait-streaming-", dir=args.dir)
    tracker = PeakTracker()
    try:
        source_path = os.path.join(tmp, "source.bin")
        write_file(source_path, size)
        first = LocalFileStore(os.path.join(tmp, "a"), chunk_size=args.chunk_kib * 1024)
        second = LocalFileStore(os.path.join(tmp, "b"), chunk_size=args.chunk_kib * 1024)
        handle = await first.put(source_path)
        os.unlink(source_path)
        data_path = (await first.resolve(handle)).path  # type: ignore[union-attr]
        raw_best = store_best = 0.0
        for attempt in range(passes):
            async def raw() -> int:
                return raw_read(data_path, args.chunk_kib * 1024)

            raw_mb_s, raw_total, raw_cpu = await timed(raw, tracker)
            store_mb_s, store_total, store_cpu = await timed(
                lambda: store_read(first, handle), tracker)
            assert raw_total == store_total == size, (raw_total, store_total, size)
            print(f"pass {attempt + 1}: raw read {raw_mb_s:6.0f} MB/s ({raw_cpu:.2f} CPU s/GiB)"
                  f"   LocalFileStore.fetch_stream {store_mb_s:6.0f} MB/s "
                  f"({store_cpu:.2f} CPU s/GiB)")
            raw_best, store_best = max(raw_best, raw_mb_s), max(store_best, store_mb_s)

        async def copy() -> int:
            copied = await second.put(first.fetch_stream(handle))
            assert copied.byte_size == size
            return size

        copy_mb_s, _, _ = await timed(copy, tracker)
        print(f"store -> store stream copy (fsync on) {copy_mb_s:8.0f} MB/s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "store_read_mb_s": round(store_best, 1),
        "raw_read_mb_s": round(raw_best, 1),
        "copy_mb_s": round(copy_mb_s, 1),
        "peak_rss_growth_mb": round(tracker.growth_mib, 1),
        "bytes_streamed": size,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer passes (still 1 GiB)")
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where the temp files go")
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--chunk-kib", type=int, default=1024)
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    args = parser.parse_args()
    if args.quick and args.size_mib < 1024:
        parser.error("--quick still streams at least 1 GiB")
    result = anyio.run(run, args, backend=args.backend)
    ratio = result["store_read_mb_s"] / result["raw_read_mb_s"]
    print(f"store read / raw read = {ratio:.2f} (goal >= 0.8); peak RSS growth "
          f"{result['peak_rss_growth_mb']} MiB (goal <= 32); backend {args.backend}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
