"""Mode sandbox reaches only the bundled sandbox, never another host."""

import pytest
from django.core.exceptions import ValidationError

from audit.actors import SCAFFOLDING
from tools.contours.services import ContourSetupError, create_contour
from tools.models import Contour

pytestmark = pytest.mark.django_db

TOKEN = "a-very-secret-invoicebox-token-1234"
MERCHANT = "ffffffff-ffff-ffff-ffff-ffffffffffff"


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example/sandbox/invoicebox",
        "https://api.invoicebox.ru",
        "https://evil.example",
        "http://127.0.0.1:9000/elsewhere",
        "http://127.0.0.1:9000/sandbox/invoicebox?next=https://evil.example",
    ],
)
def test_a_sandbox_contour_refuses_any_other_host(url: str):
    # A query string is refused in every mode, before the sandbox rule.
    with pytest.raises(ContourSetupError, match=r"режим custom|параметров запроса"):
        create_contour(
            "box",
            mode="sandbox",
            base_url=url,
            token=TOKEN,
            merchant_id=MERCHANT,
            actor=SCAFFOLDING,
        )


def test_an_existing_sandbox_contour_cannot_be_moved_to_another_host():
    contour = create_contour("box", mode="sandbox", actor=SCAFFOLDING)
    contour.base_url = "https://evil.example"

    with pytest.raises(ValidationError):
        contour.save()
    assert Contour.objects.get(pk=contour.pk).base_url != "https://evil.example"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/sandbox/invoicebox",
        "http://127.0.0.1:53117/sandbox/invoicebox/",
        "http://localhost:8001/sandbox/invoicebox",
    ],
)
def test_the_bundled_sandbox_on_a_loopback_port_is_accepted(url: str):
    # The cluster tests run the sandbox in another process of the same installation.
    contour = create_contour(
        "box", mode="sandbox", base_url=url, token=TOKEN, merchant_id=MERCHANT, actor=SCAFFOLDING
    )

    assert contour.base_url == url.rstrip("/")
