"""OAuth on the production shape: two gateway processes on PostgreSQL behind a round-robin
balancer, both knowing the one public address. Every step of a hosted assistant's flow
(registration, authorization, the person's login and consent, the code exchange, the MCP calls,
refresh and revocation) may land on either worker, and each must find what the other wrote."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from harness.cluster import (
    REDIS_URL,
    Cluster,
    build,
    free_port,
    postgres_params,
    scratch_database,
)
from tests.conftest import order_args
from tests.system.conftest import start_balancer
from tests.system.oauth.conftest import PASSWORD, OAuthClient, Served, call_tool

pytestmark = [pytest.mark.postgres, pytest.mark.system, pytest.mark.anyio]

PEOPLE = f"""
from django.contrib.auth.models import User
from tools.models import Contour, ContourRole
olga = User.objects.create_user("olga", password="{PASSWORD}")
ContourRole.objects.create(user=olga, contour=Contour.objects.get(slug="shop"), role="owner")
"""


@pytest.fixture(scope="module")
def behind_balancer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Cluster]]:
    params = postgres_params()
    if params is None:
        pytest.skip("two workers share OAuth state through PostgreSQL: set DATABASE_URL")
    tmp = tmp_path_factory.mktemp("oauth-two-workers")
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    with scratch_database(params, "gateway_oauth") as dbname:
        cluster = build(
            tmp,
            params,
            dbname,
            ["shop"],
            extra_env={
                "CELERY_TASK_ALWAYS_EAGER": "true",
                "MCP_REDIS_URL": REDIS_URL,
                "GATEWAY_OAUTH_ENABLED": "true",
            },
        )
        for worker in (cluster.a, cluster.b):
            worker.env = {**worker.env, "GATEWAY_SITE_URL": public}
        cluster.manage("shell", "-c", PEOPLE)
        balancer: subprocess.Popen[bytes] | None = None
        try:
            for server in (cluster.sandbox, cluster.a, cluster.b):
                server.start()
            _, balancer = start_balancer(tmp, [cluster.a.base, cluster.b.base], port=port)
            yield Served(base=public, env=cluster.env, db=Path(), viewer_key=""), cluster
        finally:
            if balancer is not None:
                balancer.terminate()
                balancer.wait(timeout=10)
            cluster.stop()


async def test_a_hosted_assistants_whole_flow_crosses_both_workers(
    behind_balancer: tuple[Served, Cluster],
):
    served, cluster = behind_balancer
    client = OAuthClient(served)

    # given: registration, authorization, login, consent and exchange, request by request
    # alternating between the workers
    tokens = client.connect("olga", contour="shop", toolsets=("read", "write"))
    headers = {"Authorization": f"Bearer {tokens['access_token']}"}

    # when: the official SDK client works through the balancer
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(
            streamable_http_client(f"{served.base}/mcp", http_client=http), mode="legacy"
        ) as mcp,
    ):
        listed = [tool.name for tool in (await mcp.list_tools()).tools]
        read = await mcp.call_tool("find_orders", {"page_size": 1})
        write = await mcp.call_tool("create_order", order_args())

    # then: both workers accept the token the pair issued
    assert "create_order" in listed
    assert read.structured_content["status"] == "ok", read.structured_content
    assert write.structured_content["status"] == "confirmation_required"
    for worker in (cluster.a, cluster.b):
        direct = httpx.post(
            f"{worker.base}/api/v1/call", json={"name": "find_orders"}, headers=headers, timeout=30
        )
        assert direct.status_code == 200, (worker.name, direct.text)


def test_refresh_on_one_worker_and_revocation_on_the_other_hold_for_both(
    behind_balancer: tuple[Served, Cluster],
):
    served, cluster = behind_balancer
    client = OAuthClient(served)
    first = client.connect("olga", contour="shop", toolsets=("read",))

    # when: a refresh, then a revocation of the rotated token
    rotated = client.refresh(first["refresh_token"])
    assert rotated.status_code == 200, rotated.text
    access = rotated.json()["access_token"]
    assert client.revoke(access).status_code == 200

    # then: neither worker takes any of the grant's tokens, on its very next call
    for worker in (cluster.a, cluster.b):
        for token in (first["access_token"], access):
            refused = httpx.post(
                f"{worker.base}/mcp",
                timeout=30,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "find_orders", "arguments": {}},
                },
                headers={
                    "Authorization": f"Bearer {token}",
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": "2025-11-25",
                },
            )
            assert refused.status_code == 401, (worker.name, refused.text)
            assert f'resource_metadata="{served.base}/' in refused.headers["www-authenticate"]
    assert client.refresh(rotated.json()["refresh_token"]).status_code == 400
    assert call_tool(served, access, "find_orders", {}).status_code == 401
