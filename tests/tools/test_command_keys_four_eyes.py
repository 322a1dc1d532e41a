"""Four-eyes for every key (issue 37): a key no person issued (manage.py create_api_key,
rotate_api_key) bars every superuser from approving what it prepared — whoever ran the
command may be one — and its holder as before; an operator who is no superuser decides.
The write is prepared through REST (/api/v1/call), decided on the operator's page."""

from __future__ import annotations

import html
import io
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from tests.conftest import Assistant
from tests.tools.conftest import logged_in, prepare_order
from tools.models import ApiKey, Contour, PendingConfirmation

pytestmark = pytest.mark.django_db


def command_key(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue().strip().splitlines()[-1]


def approve_on_page(person: User, cid: str) -> str:
    page = logged_in(person).post(
        f"/approvals/{cid}/", {"decision": "approve", "reason": ""}, follow=True
    )
    return html.unescape(page.content.decode())


@pytest.mark.parametrize("made_by", ["create_api_key", "rotate_api_key"])
def test_no_superuser_approves_what_a_command_key_prepared(
    made_by: str, guarded: Contour, make_user: Callable[..., User]
):
    root = make_user("root", staff=True, superuser=True)
    if made_by == "create_api_key":
        raw = command_key("create_api_key", "guarded", "--label", "бухгалтерия")
    else:
        person_key, _ = ApiKey.issue(guarded, "выдан человеком", issued_by=root)
        raw = command_key("rotate_api_key", person_key.prefix)
    assert ApiKey.objects.get(prefix=raw[: ApiKey.PREFIX_LENGTH]).issued_by_command
    _, body = prepare_order(Assistant(http=Client(), key=raw, contour=guarded))
    cid = body["confirmation"]["id"]

    refused = approve_on_page(root, cid)
    assert PendingConfirmation.objects.get(pk=cid).status == "pending", refused
    assert "выданный командой" in refused

    approve_on_page(make_user("olga", "operators"), cid)
    assert PendingConfirmation.objects.get(pk=cid).status == "approved"
