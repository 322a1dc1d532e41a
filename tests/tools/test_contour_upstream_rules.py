"""Where a contour's calls go: this process's own sandbox answers in-process only at its exact
address, and a `custom` base URL reaches no loopback or private address unless the
installation allows it (GATEWAY_ALLOW_PRIVATE_UPSTREAM), checked when connecting."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from audit.actors import SCAFFOLDING
from tests.conftest import Assistant
from tests.tools.admin.test_contour_endpoint_admin import Upstream
from tools.contours.connection import check_connection
from tools.contours.services import ContourSetupError, create_contour
from tools.keys.services import issue_key
from tools.models import Contour

pytestmark = pytest.mark.django_db

MERCHANT = "ffffffff-ffff-ffff-ffff-ffffffffffff"
TOKEN = "token-for-another-server-on-loopback-01"


@pytest.fixture
def double() -> Iterator[Upstream]:
    server = Upstream()
    yield server
    server.close()


def assistant_of(contour: Contour) -> Assistant:
    return Assistant(http=Client(), key=issue_key(contour, actor=SCAFFOLDING), contour=contour)


# -- the own sandbox only at its exact address ------------------------------------------------


def test_the_sandbox_path_on_another_loopback_port_is_asked_over_the_network(
    double: Upstream,
) -> None:
    url = f"{double.url}/sandbox/invoicebox"
    contour = create_contour(
        "other", mode="custom", base_url=url, token=TOKEN, merchant_id=MERCHANT, actor=SCAFFOLDING
    )

    assistant_of(contour).call("find_orders", {})
    out = io.StringIO()
    with pytest.raises(CommandError):  # the double answers no user: the token check fails
        call_command("check_contour", "other", stdout=out)

    assert double.tokens() and set(double.tokens()) == {f"Bearer {TOKEN}"}
    assert f"кто отвечает: сервер по адресу {url} (по сети)" in out.getvalue()


def test_the_exact_sandbox_address_is_answered_in_process(contour: Contour) -> None:
    report = check_connection(contour)

    assert report.ok, report.lines()
    assert report.answered_by.startswith("встроенная песочница этого процесса")


def test_an_address_listed_in_the_setting_is_answered_in_process(
    settings: Any, double: Upstream
) -> None:
    url = f"{double.url}/sandbox/invoicebox"
    settings.INVOICEBOX_SANDBOX_IN_PROCESS_URLS = [url]
    contour = create_contour(
        "listed", mode="sandbox", base_url=url, own_sandbox_merchant=True, actor=SCAFFOLDING
    )

    report = check_connection(contour)

    assert report.ok, report.lines()
    assert double.requests == []


# -- a custom base URL and the host's own services --------------------------------------------


def test_a_loopback_literal_is_refused_when_saving_with_the_setting_off(
    settings: Any, double: Upstream
) -> None:
    settings.GATEWAY_ALLOW_PRIVATE_UPSTREAM = False

    with pytest.raises(ContourSetupError, match="GATEWAY_ALLOW_PRIVATE_UPSTREAM"):
        create_contour(
            "inner",
            mode="custom",
            base_url=double.url,
            token=TOKEN,
            merchant_id=MERCHANT,
            actor=SCAFFOLDING,
        )
    with pytest.raises(ContourSetupError, match="локальный или внутренний"):
        create_contour(
            "inner",
            mode="custom",
            base_url="https://10.0.0.8",
            token=TOKEN,
            merchant_id=MERCHANT,
            actor=SCAFFOLDING,
        )
    assert double.requests == []


def test_a_stored_loopback_address_is_refused_when_connecting(
    settings: Any, double: Upstream
) -> None:
    # Saved while the installation allowed it; then it no longer does.
    contour = create_contour(
        "inner",
        mode="custom",
        base_url=double.url,
        token=TOKEN,
        merchant_id=MERCHANT,
        actor=SCAFFOLDING,
    )
    settings.GATEWAY_ALLOW_PRIVATE_UPSTREAM = False

    status, body = assistant_of(contour).call("find_orders", {})
    report = check_connection(contour)

    assert double.requests == []
    assert (status, body["code"]) == (502, "upstream_unavailable"), body
    assert "не разрешён" in body["message"] and "127.0.0.1" in body["message"]
    assert not report.ok and "GATEWAY_ALLOW_PRIVATE_UPSTREAM" in report.summary


def test_a_name_that_resolves_to_loopback_is_refused_when_connecting(
    settings: Any, double: Upstream
) -> None:
    # A host *name*: only the connection, resolving it, sees where it leads.
    url = double.url.replace("127.0.0.1", "localhost")
    contour = create_contour(
        "named", mode="custom", base_url=url, token=TOKEN, merchant_id=MERCHANT, actor=SCAFFOLDING
    )
    settings.GATEWAY_ALLOW_PRIVATE_UPSTREAM = False

    report = check_connection(contour)

    assert not report.ok
    assert "внутренний адрес 127.0.0.1" in report.summary
    assert double.requests == []


def test_with_the_setting_on_a_loopback_double_still_answers(double: Upstream) -> None:
    contour = create_contour(
        "double",
        mode="custom",
        base_url=double.url,
        token=TOKEN,
        merchant_id=MERCHANT,
        actor=SCAFFOLDING,
    )

    assistant_of(contour).call("find_orders", {})

    assert double.tokens() == [f"Bearer {TOKEN}"]
