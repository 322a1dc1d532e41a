"""/api/docs/ in a real browser with every non-local request blocked: Swagger UI loads from
this server, "Authorize" takes the contour key, and "Try it out" calls the API with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from audit.actors import SCAFFOLDING
from tools.contours.services import create_contour
from tools.keys.services import issue_key

pytestmark = pytest.mark.browser


def test_swagger_ui_works_offline_and_authorizes_with_the_contour_key(
    page: Any, live_server: Any, transactional_db: None, screenshots: Path
):
    # given: a contour key, and a browser that may reach nothing but this server
    key = issue_key(
        create_contour("docs", mode="sandbox", toolsets=["read"], actor=SCAFFOLDING),
        "swagger",
        actor=SCAFFOLDING,
    )
    outside: list[str] = []

    def only_local(route: Any) -> None:
        if route.request.url.startswith(live_server.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)

    # when: the docs load, the key goes into "Authorize", GET /api/v1/tools is tried out
    page.goto("/api/docs/")
    page.locator(".swagger-ui .auth-wrapper .authorize").click()
    dialog = page.locator(".dialog-ux")
    assert "contourKey" in dialog.inner_text()
    scheme = dialog.locator(".auth-container", has_text="contourKey")
    scheme.locator("input").first.fill(key)
    scheme.locator("button.authorize").click()
    scheme.locator("button.btn-done").click()
    page.locator("#operations-v1-v1_tools_retrieve .opblock-summary").click()
    page.locator("#operations-v1-v1_tools_retrieve button.try-out__btn").click()
    page.locator("#operations-v1-v1_tools_retrieve button.execute").click()
    status = page.locator(
        "#operations-v1-v1_tools_retrieve .live-responses-table tbody .response-col_status"
    ).first
    status.wait_for()
    page.screenshot(path=str(screenshots / "api-docs.png"), full_page=True)

    # then
    assert status.inner_text().strip().startswith("200")
    assert outside == []
