"""A production-shaped cluster for tests: PostgreSQL, two gateway processes, a sandbox process
and a live Celery worker on Redis, all on one dedicated database made for the run."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
from django.conf import settings

ROOT = Path(__file__).resolve().parents[1]
REDIS_URL = os.environ.get("GATEWAY_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
# Short on purpose: the fault tests' latency goes over it.
CLIENT_TIMEOUT_SECONDS = 5


def free_port() -> int:
    """A free loopback port; TEST_PORT_RANGE=9200-9299 keeps a run's servers in a range of its
    own (several runs on one machine), each port handed out once per process."""
    if not (span := os.environ.get("TEST_PORT_RANGE")):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return sock.getsockname()[1]
    low, high = (int(part) for part in span.split("-"))
    for port in range(low, high + 1):
        if port in _HANDED_OUT:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    raise RuntimeError(f"no free port in TEST_PORT_RANGE={span}")


_HANDED_OUT: set[int] = set()


# Ports handed out by server_port() in this process: one chosen for a server not started yet
# is still free, and must not be handed to another (a proxy took gateway a's once).
_HANDED_OUT: set[int] = set()


def server_port() -> int:
    """A free port below the ephemeral range (32768 and up on Linux), for a server that may be
    killed and restarted: a port from the ephemeral range can be taken meanwhile as the source
    port of an outgoing connection, and the restart then cannot bind it."""
    if os.environ.get("TEST_PORT_RANGE"):
        return free_port()
    rng = random.Random()  # noqa: S311 - a free port, not a secret
    # GATEWAY_TEST_PORTS=20200-20299: a range of this run's own (several runs on one host).
    low, _, high = os.environ.get("GATEWAY_TEST_PORTS", "20000-32000").partition("-")
    for _ in range(200):
        port = rng.randrange(int(low), int(high) + 1)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    return free_port()


def postgres_params() -> dict[str, Any]:
    """The test database's server; only tests marked `postgres` ask (tests/conftest.py skips
    them without PostgreSQL)."""
    db = settings.DATABASES["default"]
    if "postgresql" not in db["ENGINE"]:
        raise RuntimeError("a test that needs PostgreSQL lacks the `postgres` marker")
    return {
        "host": db.get("HOST") or "127.0.0.1",
        "port": int(db.get("PORT") or 5432),
        "user": db.get("USER") or "postgres",
        "password": db.get("PASSWORD") or "",
    }


def database_url(params: dict[str, Any], name: str) -> str:
    auth = params["user"] + (f":{params['password']}" if params["password"] else "")
    return f"postgres://{auth}@{params['host']}:{params['port']}/{name}"


@contextmanager
def scratch_database(params: dict[str, Any], prefix: str) -> Iterator[str]:
    """CREATE a database for the run and DROP it afterwards (FORCE: servers may linger)."""
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    admin = {**params, "dbname": "postgres", "autocommit": True}
    with psycopg.connect(**admin) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(**admin) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Server:
    """One uvicorn process serving the whole app."""

    name: str
    port: int
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        handle = self.log.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "config.asgi:application",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                "1",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
        # /health, not /api/schema/: building the schema can outlast the 2 s poll timeout on a
        # loaded machine, and every poll then starts it over.
        wait_http(f"{self.base}/health", self.process, self.log)

    def kill(self) -> None:
        """SIGKILL: no cleanup, no journal entry, exactly what a lost worker leaves behind."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def wait_http(url: str, process: subprocess.Popen[bytes], log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url} died on start:\n{log.read_text()[-3000:]}")
        try:
            httpx.get(url, timeout=5)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up:\n{log.read_text()[-3000:]}")


@dataclass
class Cluster:
    env: dict[str, str]
    db: dict[str, Any]
    sandbox: Server
    a: Server
    b: Server
    worker_log: Path
    queue: str
    contours: dict[str, dict[str, str]] = field(default_factory=dict)
    worker: subprocess.Popen[bytes] | None = None
    # The worker's own environment when it differs (a proxied database or broker), and
    # whether it runs the beat schedule too (-B), with its schedule file in this directory.
    worker_env: dict[str, str] | None = None
    beat_dir: Path | None = None
    # The sandbox's (the upstream's) own database when it has one (issue 39.5: a fault of the
    # gateways' database must not touch the upstream's records); the gateways' otherwise.
    sandbox_db: dict[str, Any] | None = None

    @property
    def sandbox_api(self) -> str:
        return f"{self.sandbox.base}/sandbox/invoicebox/v3"

    def manage(
        self,
        *args: str,
        stdin: str | None = None,
        timeout: float | None = 180,
        env: dict[str, str] | None = None,
    ) -> str:
        """A management command against the cluster's database (in `env`, the cluster's by
        default); timeout None for one that bounds itself by what it waits for
        (harness/chaos_faults.py's resend)."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env or self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    def sql(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(**self.db, autocommit=True) as conn:
            cursor = conn.execute(query, params)
            return cursor.fetchall() if cursor.description else []

    def scalar(self, query: str, *params: Any) -> Any:
        return self.sql(query, *params)[0][0]

    def sandbox_sql(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        """A query on the sandbox's tables, through a connection to its own database."""
        with psycopg.connect(**(self.sandbox_db or self.db), autocommit=True) as conn:
            cursor = conn.execute(query, params)
            return cursor.fetchall() if cursor.description else []

    def sandbox_scalar(self, query: str, *params: Any) -> Any:
        return self.sandbox_sql(query, *params)[0][0]

    def call(
        self, server: Server, slug: str, name: str, arguments: dict[str, Any], timeout: float = 30
    ) -> httpx.Response:
        return httpx.post(
            f"{server.base}/api/v1/call",
            json={"name": name, "arguments": arguments},
            headers={"Authorization": f"Bearer {self.contours[slug]['key']}"},
            timeout=timeout,
        )

    def sandbox_request(
        self, method: str, path: str, slug: str, body: Any = None
    ) -> httpx.Response:
        return httpx.request(
            method,
            f"{self.sandbox_api}{path}",
            json=body,
            timeout=30,
            headers={
                "Authorization": f"Bearer {self.contours[slug]['token']}",
                "User-Agent": "cluster-tests/1.0",
            },
        )

    def set_faults(self, slug: str, **switches: Any) -> None:
        response = self.sandbox_request("PUT", "/_sandbox/faults", slug, switches)
        assert response.status_code == 200, response.text

    def upstream_orders(self, slug: str) -> int:
        return self.sandbox_scalar(
            "select count(*) from invoicebox_sandboxorder where merchant_id = %s",
            uuid.UUID(self.contours[slug]["merchant_id"]),
        )

    def start_worker(self) -> None:
        handle = self.worker_log.open("ab")
        start = self.worker_log.stat().st_size if self.worker_log.exists() else 0
        beat = ["-B", "--schedule", str(self.beat_dir / "beat-schedule")] if self.beat_dir else []
        self.worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-P",
                "solo",
                "-Q",
                self.queue,
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-l",
                "info",
                *beat,
            ],
            cwd=ROOT,
            env=self.worker_env or self.env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            # A group of its own: with -B the beat is a child process, and a killed worker
            # must not leave its beat behind (a lost host takes both).
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.worker.poll() is not None:
                raise RuntimeError(f"celery worker died:\n{self.worker_log.read_text()[-3000:]}")
            if b"ready." in self.worker_log.read_bytes()[start:]:
                return
            time.sleep(0.2)
        raise RuntimeError(f"celery worker not ready:\n{self.worker_log.read_text()[-3000:]}")

    def kill_worker(self) -> None:
        """SIGKILL the worker and its beat: a task it holds is never acknowledged."""
        assert self.worker is not None
        _signal_group(self.worker, signal.SIGKILL)
        self.worker.wait(timeout=10)

    def send_task(self, name: str, *args: Any) -> None:
        from celery import Celery

        # Not the current app: shared tasks of later tests in this process must stay on ours.
        client = Celery("cluster-tests", broker=REDIS_URL, set_as_current=False)
        client.send_task(name, args=args, queue=self.queue)
        client.close()

    def stop(self) -> None:
        for server in (self.a, self.b, self.sandbox):
            server.stop()
        if self.worker is not None:
            # The group even when the main process is gone: its beat may still run.
            _signal_group(self.worker, signal.SIGTERM)
            try:
                self.worker.wait(timeout=15)
            except subprocess.TimeoutExpired:
                _signal_group(self.worker, signal.SIGKILL)
        import redis

        client = redis.Redis.from_url(REDIS_URL)
        stale = [self.queue.encode(), *client.scan_iter(match=f"_kombu.binding*{self.queue}")]
        client.delete(*stale)
        client.close()


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass


# Mode custom is how an owner points a contour at another host (a proxy, a test double): the
# sandbox process is then a foreign upstream, so its account is registered here explicitly.
CREATE_CONTOURS = """
import json, uuid
from audit.actors import SCAFFOLDING
from sandbox.api import register_account
from tools.contours.services import create_contour
from tools.keys.services import issue_key
out = {}
for slug in SLUGS:
    token, merchant = uuid.uuid4().hex, str(uuid.uuid4())
    contour = create_contour(slug, mode=MODE, toolsets=["read", "write"], base_url=BASE,
                             token=token, merchant_id=merchant, actor=SCAFFOLDING)
    if MODE == "custom" and REGISTER:
        register_account(token, merchant)
    out[slug] = {"key": issue_key(contour, actor=SCAFFOLDING), "token": token,
                 "merchant_id": merchant}
print("CONTOURS=" + json.dumps(out))
"""
# The accounts on the sandbox's own database (build's `sandbox_database`).
REGISTER_ACCOUNTS = """
from sandbox.api import register_account
for contour in CONTOURS.values():
    register_account(contour["token"], contour["merchant_id"])
"""


def build(
    tmp: Path,
    params: dict[str, Any],
    dbname: str,
    slugs: list[str],
    *,
    mode: str = "sandbox",
    extra_env: dict[str, str] | None = None,
    sandbox_database: tuple[dict[str, Any], str] | None = None,
) -> Cluster:
    """`sandbox_database`: the server and the name of a database of the sandbox's own; the
    gateways' (`params`, `dbname`) otherwise."""
    ports = [server_port() for _ in range(3)]
    queue = f"gateway-tests-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    base_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_"))},
        "DATABASE_URL": database_url(params, dbname),
        "CELERY_BROKER_URL": REDIS_URL,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        # Gateways reach the sandbox process over real HTTP, like a real upstream.
        "INVOICEBOX_SANDBOX_IN_PROCESS": "false",
        # A suite that turns in-process back on (extra_env) has each gateway answer the
        # sandbox process's address itself: it must be named exactly to be answered in-process.
        "INVOICEBOX_SANDBOX_IN_PROCESS_URLS": f"http://127.0.0.1:{ports[0]}/sandbox/invoicebox",
        "INVOICEBOX_TIMEOUT_SECONDS": str(CLIENT_TIMEOUT_SECONDS),
        "INVOICEBOX_READ_ATTEMPTS": "2",
        "INVOICEBOX_BACKOFF_SECONDS": "0",
        "INVOICEBOX_RATE_LIMIT": "100000/30",
        # every OAuth client of the suites registers from 127.0.0.1 (the bound itself is tested
        # in tests/adapters/oauth/test_served_registration.py)
        "GATEWAY_OAUTH_REGISTRATIONS_PER_ADDRESS_HOUR": "1000",
        # Notifications and approval links point at gateway A.
        "GATEWAY_SITE_URL": f"http://127.0.0.1:{ports[1]}",
        "LOG_LEVEL": "WARNING",
        **(extra_env or {}),
    }
    db = {**params, "dbname": dbname}
    sandbox_env = {**base_env, "GATEWAY_SITE_URL": f"http://127.0.0.1:{ports[0]}"}
    if sandbox_database is not None:
        sandbox_env["DATABASE_URL"] = database_url(*sandbox_database)
    sandbox = Server("sandbox", ports[0], sandbox_env, tmp / "sandbox.log")
    a = Server("a", ports[1], base_env, tmp / "a.log")
    b = Server(
        "b",
        ports[2],
        {**base_env, "GATEWAY_SITE_URL": f"http://127.0.0.1:{ports[2]}"},
        tmp / "b.log",
    )
    cluster = Cluster(
        env=base_env, db=db, sandbox=sandbox, a=a, b=b, worker_log=tmp / "worker.log", queue=queue
    )
    cluster.manage("migrate", "--noinput", "-v", "0")
    if sandbox_database is not None:
        cluster.sandbox_db = {**sandbox_database[0], "dbname": sandbox_database[1]}
        cluster.manage("migrate", "--noinput", "-v", "0", env=sandbox_env)
    code = (
        f"SLUGS = {slugs!r}\nMODE = {mode!r}\nREGISTER = {sandbox_database is None!r}\n"
        f"BASE = {sandbox.base + '/sandbox/invoicebox'!r}\n" + CREATE_CONTOURS
    )
    out = cluster.manage("shell", "-c", code)
    cluster.contours = json.loads(out.split("CONTOURS=", 1)[1])
    if sandbox_database is not None and mode == "custom":
        accounts = f"CONTOURS = {cluster.contours!r}\n" + REGISTER_ACCOUNTS
        cluster.manage("shell", "-c", accounts, env=sandbox_env)
    return cluster
