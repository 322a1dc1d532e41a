"""The home page at `/` in a real browser: Russian, every surface linked, the MCP URL with the
host and port the browser actually used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser


def test_home_page_says_what_this_is_links_every_surface_and_the_real_mcp_url(
    page: Any, live_server: Any, screenshots: Path
):
    # when
    response = page.goto("/")

    # then
    assert response.status == 200
    assert page.locator("html").get_attribute("lang") == "ru"
    assert "Шлюз между ИИ-ассистентами и API Инвойсбокс" in page.locator("h1").inner_text()
    assert page.locator("[data-mcp-url]").inner_text() == f"{live_server.url}/mcp"
    assert f'"url": "{live_server.url}/mcp"' in page.locator("pre").inner_text()
    links = {
        name: page.locator(f'a[data-link="{name}"]').get_attribute("href")
        for name in ("admin", "approvals", "dashboard", "docs", "health")
    }
    assert links == {
        "admin": "/admin/",
        "approvals": "/approvals/",
        "dashboard": "/dashboard/",
        "docs": "/api/docs/",
        "health": "/health",
    }
    page.screenshot(path=str(screenshots / "home.png"), full_page=True)

    # and every link leads somewhere real (a login page counts for the staff surfaces)
    for name, href in links.items():
        answer = page.request.get(href)
        assert answer.status == 200, (name, answer.status)


def test_home_page_names_the_host_and_port_the_request_came_to(client: Any, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["gateway.example"]
    response = client.get("/", HTTP_HOST="gateway.example:8443")
    assert response.status_code == 200
    body = response.content.decode()
    assert "http://gateway.example:8443/mcp" in body
    assert "Очередь одобрения" in body
