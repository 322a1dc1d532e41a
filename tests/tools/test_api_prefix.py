"""The /l3/ contour: a per-contour API prefix, validated like the base URL, sent on
every request, served by the sandbox, explained in the admin."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from audit.actors import SCAFFOLDING
from invoicebox.client import InvoiceboxClient
from sandbox.api import DEMO_MERCHANT_ID, DEMO_TOKEN
from sandbox.models import SandboxOrder
from tests.conftest import Assistant
from tests.invoicebox.test_client import SANDBOX_URL, CountingTransport, new_order
from tests.tools.admin.test_contour_endpoint_admin import (
    ORDER_ID,
    Upstream,
    custom_contour,
)
from tools.contours.services import ContourSetupError, create_contour
from tools.keys.services import issue_key
from tools.models import Contour

pytestmark = pytest.mark.django_db


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    yield server
    server.close()


def test_the_sandbox_serves_l3_as_it_serves_v3() -> None:
    transport = CountingTransport()
    client = InvoiceboxClient(
        base_url=SANDBOX_URL,
        token=DEMO_TOKEN,
        merchant_id=DEMO_MERCHANT_ID,
        transport=transport,
        read_attempts=1,
        backoff_seconds=0,
        api_prefix="l3",
    )

    created = client.create_order(new_order())
    found = client.get_order(created.id)

    assert found is not None and found.id == created.id
    assert SandboxOrder.objects.filter(order_id=created.id).exists()
    assert {r.url.path.split("/")[3] for r in transport.requests} == {"l3"}


def test_a_contours_prefix_reaches_every_request_over_http(upstream: Upstream) -> None:
    contour = custom_contour(upstream.url)
    contour.api_prefix = "l3"
    contour.api_token = "29078-API:" + "ab" * 16  # a new token comes with the new prefix
    contour.save()
    assistant = Assistant(http=Client(), key=issue_key(contour, actor=SCAFFOLDING), contour=contour)

    _, body = assistant.call("get_order", {"order_id": ORDER_ID})

    assert body["code"] == "not_found", body
    assert [r["path"].split("?")[0] for r in upstream.requests] == ["/l3/filter/api/order/order"]


def test_a_prefix_the_api_has_not_is_refused_like_a_base_url() -> None:
    contour = create_contour("l3", mode="sandbox", api_prefix="l3", actor=SCAFFOLDING)
    contour.api_prefix = "v4"

    with pytest.raises(ValidationError) as caught:
        contour.full_clean()
    with pytest.raises(ValidationError):
        contour.save()
    with pytest.raises(ContourSetupError):
        create_contour("v4", mode="sandbox", api_prefix="v4", actor=SCAFFOLDING)

    assert "api_prefix" in caught.value.message_dict
    assert Contour.objects.get(slug="l3").api_prefix == "l3"


def test_a_new_prefix_without_a_new_token_clears_the_token() -> None:
    contour = create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    contour.api_prefix = "l3"

    with pytest.raises(ValidationError) as caught:
        contour.full_clean()
    contour.save()

    assert "api_token" in caught.value.message_dict
    assert Contour.objects.get(pk=contour.pk).api_token == ""
