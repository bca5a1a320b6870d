"""Scale-out benchmark: plait on DBOS against bare DBOS, and S3Store against raw obstore.

(a) 1,000 short runs (3 steps each) drained from a DBOS queue by 1, 2 and 4 worker processes
    sharing one PostgreSQL database: bare DBOS workflows (the baseline) and, when the DBOS
    runtime is available, the same pipeline as a plait ``Workflow``; the bare baseline also on
    SQLite. Timed from the first enqueue to the last result.
(b) S3Store put/get MB/s of a streamed body against obstore's own calls on the same SeaweedFS
    server, and the peak RSS growth of an S3Store round trip of 1 GiB.
Both servers are started here (tests/realservers.py), on 127.0.0.1. The last line printed is
one JSON object.

    python benchmarks/scale.py [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from realservers import PostgresServer, S3Server, run_postgres, run_seaweedfs  # noqa: E402
from rss import RssSampler  # noqa: E402

MiB = 1024 * 1024


# --- DBOS ---------------------------------------------------------------------------------------


def drain(mode: str, url: str, workers: int, runs: int, concurrency: int) -> float:
    """Start ``workers`` processes, enqueue ``runs`` runs, wait for all results: runs per second."""
    from dbos import DBOSClient, EnqueueOptions

    procs = [
        subprocess.Popen([sys.executable, str(HERE / "_dbos_worker.py"), mode, url,
                          str(concurrency)], stdout=subprocess.PIPE)
        for _ in range(workers)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            if line != b"ready":
                raise RuntimeError(f"{mode} worker failed to start")
        client = DBOSClient(system_database_url=url)
        try:
            name = "three_steps"
            started = time.perf_counter()
            if mode == "bare":
                options = EnqueueOptions(queue_name="bench", workflow_name=name)
                handles = enqueue_all(url, client, options, runs)
                results = [h.get_result(polling_interval_sec=0.01) for h in handles]
            else:
                from _plait_pipeline import enqueue_plait

                results = enqueue_plait(url, runs, "bench")
            elapsed = time.perf_counter() - started
        finally:
            client.destroy()
        expected = [(i + 1) * 2 - 3 for i in range(runs)]
        if results != expected:
            raise RuntimeError(f"{mode}: wrong results")
        return runs / elapsed
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)


def enqueue_all(url: str, client: Any, options: Any, runs: int) -> list[Any]:
    """Enqueue every run in one transaction (one-by-one enqueues compete with the workers)."""
    import sqlalchemy as sa

    if url.startswith("postgresql://"):
        url = url.replace("postgresql://", "postgresql+psycopg://", 1)
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            return [client.enqueue_in_transaction(conn, options, i) for i in range(runs)]
    finally:
        engine.dispose()


def fresh_database(pg: PostgresServer, name: str) -> str:
    import psycopg

    with psycopg.connect(pg.url(), autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    return pg.url(name)


def plait_runtime_available() -> bool:
    try:
        import plait.dbos  # noqa: F401
    except ImportError:
        return False
    return True


# --- S3 -----------------------------------------------------------------------------------------


def _blocks(total: int, chunk: int) -> Iterator[bytes]:
    block = hashlib.sha256(b"plait").digest() * (chunk // 32)
    for _ in range(total // chunk):
        yield block


async def _ablocks(total: int, chunk: int) -> AsyncIterator[bytes]:
    for b in _blocks(total, chunk):
        yield b


def s3_figures(server: S3Server, size: int, big: int) -> dict[str, float]:
    import anyio
    import obstore
    from obstore.store import S3Store as RawS3

    from plait.stores import S3Store

    chunk = 1 * MiB
    store = S3Store(server.bucket, prefix="bench/", endpoint=server.endpoint,
                    region=server.region, access_key_id=server.access_key_id,
                    secret_access_key=server.secret_access_key)
    raw = RawS3(server.bucket, endpoint=server.endpoint, region=server.region,
                access_key_id=server.access_key_id, secret_access_key=server.secret_access_key,
                client_options={"allow_http": True})
    out: dict[str, float] = {}

    def raw_round() -> tuple[float, float]:
        # obstore's own calls, blocking, with the same part size and concurrency as S3Store.
        t0 = time.perf_counter()
        obstore.put(raw, "bench/raw", _blocks(size, chunk), chunk_size=8 * MiB,
                    max_concurrency=4)
        t1 = time.perf_counter()
        got = sum(len(c) for c in obstore.get(raw, "bench/raw").stream(min_chunk_size=chunk))
        t2 = time.perf_counter()
        assert got == size
        return size / MiB / (t1 - t0), size / MiB / (t2 - t1)

    async def plait_round() -> tuple[float, float]:
        t0 = time.perf_counter()
        handle = await store.put(_ablocks(size, chunk))
        t1 = time.perf_counter()
        got = 0
        async for c in store.fetch_stream(handle):
            got += len(c)
        t2 = time.perf_counter()
        assert got == size
        await store.delete(handle)
        return size / MiB / (t1 - t0), size / MiB / (t2 - t1)

    # The big round trip first, while the heap is still small: its RSS growth is honest.
    async def big_round() -> None:
        handle = await store.put(_ablocks(big, chunk))
        got = 0
        async for c in store.fetch_stream(handle):
            got += len(c)
        assert got == big
        await store.delete(handle)

    with RssSampler() as rss:
        t0 = time.perf_counter()
        anyio.run(big_round)
        out["s3_big_round_trip_s"] = time.perf_counter() - t0
    out["s3_big_mb"] = big / MiB
    out["s3_big_peak_rss_growth_mb"] = (rss.peak - rss.base) / MiB
    out["s3_big_peak_rss_mb"] = rss.peak / MiB
    # Alternate and keep the best of five: the server's own variance is larger than either
    # client's overhead.
    raw_put, raw_get, s3_put, s3_get = [], [], [], []
    for _ in range(5):
        p, g = raw_round()
        raw_put.append(p)
        raw_get.append(g)
        p, g = anyio.run(plait_round)
        s3_put.append(p)
        s3_get.append(g)
    out.update(obstore_put_mb_s=max(raw_put), obstore_get_mb_s=max(raw_get),
               s3_put_mb_s=max(s3_put), s3_get_mb_s=max(s3_get))

    return {k: round(v, 1) for k, v in out.items()}


# --- main ---------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, smaller bodies")
    args = parser.parse_args()
    runs = 200 if args.quick else 1000
    reps = 1 if args.quick else 2
    worker_counts = [1, 2] if args.quick else [1, 2, 4]
    concurrency = 20
    result: dict[str, Any] = {"runs": runs, "cores": os.cpu_count()}

    with run_postgres() as pg:
        baseline: dict[str, float] = {}
        plait: dict[str, float] | None = {} if plait_runtime_available() else None
        # Bare and plait alternate and each keeps its best of ``reps`` drains: on two cores the
        # machine's own noise (±10 %) is larger than the difference being measured.
        for n in worker_counts:
            for rep in range(reps):
                figure = drain("bare", fresh_database(pg, f"bare{n}_{rep}"), n, runs, concurrency)
                baseline[str(n)] = round(max(baseline.get(str(n), 0.0), figure), 1)
                if plait is not None:
                    figure = drain("plait", fresh_database(pg, f"plait{n}_{rep}"), n, runs,
                                   concurrency)
                    plait[str(n)] = round(max(plait.get(str(n), 0.0), figure), 1)
            print(f"DBOS / PostgreSQL, {n} worker(s): bare {baseline[str(n)]} runs/s, "
                  f"plait {plait[str(n)] if plait is not None else '-'} runs/s", flush=True)
        result["dbos_baseline_runs_per_s"] = baseline
        result["runs_per_s"] = plait
        if plait is not None:
            result["plait_overhead_pct"] = {
                n: round((baseline[n] / plait[n] - 1) * 100, 1) for n in baseline
            }
    sqlite: dict[str, float] = {}
    with __import__("tempfile").TemporaryDirectory() as tmp:
        for n in worker_counts[:2]:
            url = f"sqlite:///{tmp}/bare{n}.sqlite"
            sqlite[str(n)] = round(drain("bare", url, n, runs // 2, concurrency), 1)
            print(f"bare DBOS / SQLite, {n} worker(s): {sqlite[str(n)]} runs/s", flush=True)
    result["dbos_baseline_sqlite_runs_per_s"] = sqlite

    with run_seaweedfs() as s3:
        size = (64 if args.quick else 256) * MiB
        big = (256 if args.quick else 1024) * MiB
        figures = s3_figures(s3, size, big)
    for key, value in figures.items():
        print(f"{key}: {value}")
    result.update(figures)
    result["s3_put_ratio"] = round(figures["s3_put_mb_s"] / figures["obstore_put_mb_s"], 2)
    result["s3_get_ratio"] = round(figures["s3_get_mb_s"] / figures["obstore_get_mb_s"], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
