"""The suites that drive servers, subprocesses and real clients, and, for the client tests, one
production-shaped cluster: two gateway processes on PostgreSQL with Redis, the sandbox upstream,
and a round-robin balancer in front (no sticky routing), so every request of a session may land
on either worker."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.cluster import (
    REDIS_URL,
    ROOT,
    Cluster,
    build,
    free_port,
    postgres_params,
    scratch_database,
)
from harness.web_proxies import PROXIES, running, unavailable
from tests.conftest import order_args

NODE_DIR = ROOT / "tests" / "system" / "node"
NODE = NODE_DIR / "node_modules" / ".bin" / "node"  # node@22 from npm (the conformance suite)
SESSIONS = 10  # per client, each a full session: 10 of 10 must pass
# Through nginx and Caddy (docs/deploy's samples) the same clients again, fewer sessions each:
# the round robin between the workers is what the ten above are for.
PROXIED_SESSIONS = 3
# One contour per client: their journals and orders stay apart.
SLUGS = [
    "python",
    "typescript",
    "fastmcp",
    "langchain",
    "agents",
    "remote",
    "conformance",
    "hygiene",
    "revoked",
    "relay",
]

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything here carries the `system` marker (`-m "not system"` is the quick run without
    servers); the chaos campaigns (`chaos`) run apart, in `make chaos`."""
    for item in items:
        if item.path.is_relative_to(HERE) and item.get_closest_marker("chaos") is None:
            item.add_marker(pytest.mark.system)


@dataclass
class Balanced:
    """The cluster behind a balancer: `url` is what a client is given."""

    cluster: Cluster
    url: str
    conformance_url: str  # the same, the conformance contour's key added (the suite sends none)
    balancers: list[subprocess.Popen[bytes]]
    front: str = "balancer"  # what `url` is: the test balancer, or nginx or caddy (`front`)
    sessions: int = SESSIONS  # how many sessions each client opens through it

    def key(self, slug: str) -> str:
        return self.cluster.contours[slug]["key"]

    def worker_url(self, which: str) -> str:
        return f"{getattr(self.cluster, which).base}/mcp"


def start_balancer(
    tmp: Path, upstreams: list[str], key: str | None = None, port: int | None = None
) -> tuple[str, subprocess.Popen[bytes]]:
    port = port or free_port()
    args = [sys.executable, "-m", "tests.system.balancer", str(port), *upstreams]
    if key:
        args += ["--key", key]
    log = (tmp / f"balancer-{port}.log").open("ab")
    process = subprocess.Popen(args, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
            return f"http://127.0.0.1:{port}/mcp", process
        except httpx.TransportError:
            if process.poll() is not None:
                raise RuntimeError("balancer died") from None
            time.sleep(0.1)
    raise RuntimeError("balancer did not come up")


@pytest.fixture(scope="session")
def balanced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Balanced]:
    params = postgres_params()  # the tests marked `postgres`: tests/conftest.py skips the rest
    if not NODE.exists():
        pytest.fail(f"{NODE} missing: `make test` installs tests/system/node (npm ci)")
    tmp = tmp_path_factory.mktemp("system")
    with scratch_database(params, "gateway_system") as dbname:
        # Eager tasks: nothing here needs the Celery worker; Redis still carries the answers.
        cluster = build(
            tmp,
            params,
            dbname,
            SLUGS,
            extra_env={
                "CELERY_TASK_ALWAYS_EAGER": "true",
                "MCP_REDIS_URL": REDIS_URL,
                "MCP_ELICITATION_TIMEOUT_SECONDS": "5",
                # The suites here open dozens of sessions with one key within a minute (the
                # conformance suite one per scenario): the per-key cap (tested in
                # tests/adapters/mcp/test_tenants.py) would refuse the last ones.
                "MCP_MAX_SESSIONS_PER_KEY": "200",
            },
        )
        balancers: list[subprocess.Popen[bytes]] = []
        try:
            for server in (cluster.sandbox, cluster.a, cluster.b):
                server.start()
            upstreams = [cluster.a.base, cluster.b.base]
            url, process = start_balancer(tmp, upstreams)
            balancers.append(process)
            conformance_url, process = start_balancer(
                tmp, upstreams, cluster.contours["conformance"]["key"]
            )
            balancers.append(process)
            yield Balanced(cluster, url, conformance_url, balancers)
        finally:
            for process in balancers:
                process.terminate()
                process.wait(timeout=10)
            cluster.stop()


@pytest.fixture(scope="session", params=("balancer", *PROXIES))
def front(
    request: pytest.FixtureRequest,
    balanced: Balanced,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Balanced]:
    """The cluster as a client meets it: through the test balancer, or through Debian's nginx
    or caddy running docs/deploy's sample, round robin over both workers. Each proxy starts
    once for the whole run (pytest orders the tests by it)."""
    name = request.param
    if name == "balancer":
        yield balanced
        return
    if reason := unavailable(name):
        pytest.skip(reason)
    upstreams = [
        server.base.removeprefix("http://") for server in (balanced.cluster.a, balanced.cluster.b)
    ]
    with running(name, upstreams, tmp_path_factory.mktemp(f"front-{name}")) as base:
        yield replace(balanced, url=f"{base}/mcp", front=name, sessions=PROXIED_SESSIONS)


def order() -> dict[str, Any]:
    return order_args()


def check_session(steps: dict[str, Any]) -> None:
    """What every client's session must have seen (the steps of tests/system/node/ts_client.mjs
    and of the Python clients alike)."""
    assert "error" not in steps, steps
    assert {"create_order", "find_orders", "get_order"} <= set(steps["tools"]), steps["tools"]
    assert steps["find"]["status"] == "ok", steps["find"]
    assert steps["prepared"]["status"] == "confirmation_required", steps["prepared"]
    assert steps["created"]["status"] == "ok", steps["created"]
    assert steps["read"]["status"] == "ok", steps["read"]
    assert steps["read"]["data"]["order_id"] == steps["created"]["data"]["order_id"]
    assert steps["refused"]["status"] == "rejected", steps["refused"]
    assert steps["refused"]["isError"] is True, steps["refused"]
