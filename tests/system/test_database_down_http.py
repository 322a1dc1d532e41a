"""Issue 27: with the gateway's database away, the doors that read it before any tool runs (the
MCP Streamable HTTP key lookup, OAuth's token endpoint, REST's key lookup) answer the stable
envelope, 503 `database_unavailable`, never an HTML page or a bare 500. Over real HTTP: one
uvicorn gateway whose PostgreSQL is reached through a TCP proxy that then refuses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.cluster import Cluster, build, postgres_params, scratch_database
from harness.proxy import TcpProxy

pytestmark = [pytest.mark.postgres]

SLUG = "down"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "database-down-test", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, TcpProxy, Path]]:
    tmp = tmp_path_factory.mktemp("database-down")
    params = postgres_params()
    with scratch_database(params, "gateway_dbdown") as dbname:
        built = build(
            tmp, params, dbname, [SLUG], extra_env={"INVOICEBOX_SANDBOX_IN_PROCESS": "true"}
        )
        proxy = TcpProxy(target_port=int(params["port"]), target_host=params["host"]).start()
        spool = tmp / "state"
        spool.mkdir()
        built.env["GATEWAY_STATE_DIR"] = str(spool)  # manage(): the drain reads the same spool
        auth = params["user"] + (f":{params['password']}" if params["password"] else "")
        built.a.env = {
            **built.a.env,
            "GATEWAY_STATE_DIR": str(spool),
            "DATABASE_URL": f"postgres://{auth}@127.0.0.1:{proxy.port}/{dbname}",
        }
        try:
            built.a.start()
            yield built, proxy, spool
        finally:
            proxy.stop()
            built.stop()


def bearer(cluster: Cluster) -> dict[str, str]:
    return {"Authorization": f"Bearer {cluster.contours[SLUG]['key']}"}


def assert_database_unavailable(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 503, (response.status_code, response.text[:500])
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    assert (body["status"], body["code"]) == ("error", "database_unavailable"), body
    assert body["data"]["retry_after_seconds"] > 0
    # Answered while the journal's table was away: its entry waits in the spool.
    assert body.get("journal_pending"), body
    return body


def test_the_mcp_door_answers_the_envelope_when_the_key_cannot_be_read(
    gateway: tuple[Cluster, TcpProxy, Path],
):
    cluster = gateway[0]
    up = httpx.post(
        f"{cluster.a.base}/mcp",
        json=INITIALIZE,
        timeout=30,
        headers={**MCP_HEADERS, **bearer(cluster)},
    )
    assert up.status_code == 200, up.text  # the same request, the database there

    with_database_down(
        gateway,
        lambda: assert_database_unavailable(
            httpx.post(
                f"{cluster.a.base}/mcp",
                json=INITIALIZE,
                timeout=30,
                headers={**MCP_HEADERS, **bearer(cluster)},
            )
        ),
    )


def test_the_oauth_token_endpoint_answers_the_envelope_without_its_database(
    gateway: tuple[Cluster, TcpProxy, Path],
):
    cluster = gateway[0]
    form = {
        "grant_type": "authorization_code",
        "code": "no-such-code",
        "redirect_uri": "http://127.0.0.1:1/callback",
        "client_id": "no-such-client",
        "code_verifier": "v" * 43,
    }
    up = httpx.post(f"{cluster.a.base}/token", data=form, timeout=30)
    assert 400 <= up.status_code < 500, up.text  # refused as OAuth says, the database there

    with_database_down(
        gateway,
        lambda: assert_database_unavailable(
            httpx.post(f"{cluster.a.base}/token", data=form, timeout=30)
        ),
    )


def test_the_rest_door_answers_the_envelope_when_the_key_cannot_be_read(
    gateway: tuple[Cluster, TcpProxy, Path],
):
    cluster = gateway[0]
    with_database_down(
        gateway,
        lambda: assert_database_unavailable(
            cluster.call(cluster.a, SLUG, "find_orders", {"page_size": 1})
        ),
    )


def with_database_down(gateway: tuple[Cluster, TcpProxy, Path], check: Any) -> None:
    """Run check with the database refused, then see the spooled entry reach the journal."""
    cluster, proxy, spool = gateway
    before = cluster.scalar(
        "select count(*) from audit_journalentry where code = 'database_unavailable'"
    )
    proxy.set(refuse=True)
    proxy.cut()
    try:
        body = check()
    finally:
        proxy.set()
    assert list((spool / "journal-spool").glob("*.json")), "nothing spooled"
    cluster.manage("shell", "-c", "from audit import spool; spool.drain()")
    entries = cluster.sql(
        "select code, spool_id from audit_journalentry where code = 'database_unavailable'"
    )
    assert len(entries) == before + 1
    assert body["journal_pending"] in {row[1] for row in entries}
