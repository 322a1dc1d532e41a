"""A GATEWAY_SECRETS_KEY that can't read the stored tokens (lost, changed, another host's):
nothing answers 500; the contour is "token unreadable" everywhere a person or an assistant
looks, and the documented recovery (enter the token again) works end to end."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from tests.conftest import Assistant
from tests.tools.admin.test_owner_admin import contour_form
from tools.models import Contour

pytestmark = pytest.mark.django_db

MARKER = "токен не читается — введите заново"


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture
def other_key(settings: Any, assistant: Assistant) -> str:
    """The process restarted with another valid key: the stored ciphertext stays as it was."""
    key = Fernet.generate_key().decode()
    settings.GATEWAY_SECRETS_KEYS = [key]
    return key


def stored_column(contour: Contour) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT api_token FROM tools_contour WHERE id = %s", [contour.pk])
        return cursor.fetchone()[0]


def test_the_assistants_call_gets_a_stable_code_not_a_500(
    other_key: str, assistant: Assistant
) -> None:
    status, body = assistant.call("get_order", {"order_id": "0190eeee-0000-7000-8000-000000000000"})

    assert (status, body["code"]) == (503, "contour_token_unreadable"), body
    assert "введите" in body["hint"] or "ввести токен заново" in body["hint"]


def test_health_is_degraded_and_counts_without_naming(other_key: str, assistant: Assistant) -> None:
    response = Client().get("/health")

    body = response.json()
    assert response.status_code == 200
    assert body["status"] == "degraded"
    assert body["checks"]["secrets"] == {"status": "degraded", "unreadable_tokens": 1}
    assert assistant.contour.slug not in response.content.decode()


def test_the_admin_list_and_page_work_and_say_enter_it_again(
    other_key: str, owner: Client, assistant: Assistant
) -> None:
    listing = owner.get("/admin/tools/contour/")
    page = owner.get(f"/admin/tools/contour/{assistant.contour.pk}/change/")

    assert listing.status_code == 200 and MARKER in listing.content.decode()
    assert page.status_code == 200 and MARKER in page.content.decode()


def test_saving_other_fields_keeps_the_unreadable_ciphertext(
    other_key: str, owner: Client, assistant: Assistant
) -> None:
    contour = Contour.objects.get(pk=assistant.contour.pk)
    before = stored_column(contour)

    response = owner.post(
        f"/admin/tools/contour/{contour.pk}/change/", contour_form(contour, name="Переименован")
    )

    assert response.status_code == 302
    assert Contour.objects.get(pk=contour.pk).name == "Переименован"
    assert stored_column(contour) == before  # the right key, put back, still reads it


def test_check_contour_says_so_without_a_traceback(other_key: str, assistant: Assistant) -> None:
    with pytest.raises(CommandError, match="токен не читается"):
        run("check_contour", assistant.contour.slug)


def test_rotate_skips_and_names_what_it_cannot_read(other_key: str, assistant: Assistant) -> None:
    before = stored_column(assistant.contour)

    out = run("rotate_secrets_key")

    assert f"{assistant.contour.slug}.api_token" in out
    assert stored_column(assistant.contour) == before


def test_the_owner_enters_the_token_again_in_the_admin(
    other_key: str, owner: Client, assistant: Assistant
) -> None:
    contour = Contour.objects.get(pk=assistant.contour.pk)
    token = contour_token_of_sandbox(assistant)

    response = owner.post(
        f"/admin/tools/contour/{contour.pk}/change/", contour_form(contour, api_token=token)
    )
    status, body = assistant.call("find_orders", {})

    assert response.status_code == 302
    assert (status, body["status"]) == (200, "ok"), body
    assert Client().get("/health").json()["checks"]["secrets"]["unreadable_tokens"] == 0


def test_the_owner_enters_the_token_again_with_a_command(
    other_key: str, tmp_path: Path, assistant: Assistant
) -> None:
    token_file = tmp_path / "token.txt"
    token_file.write_text(contour_token_of_sandbox(assistant) + "\r\n")

    out = run("set_contour_token", assistant.contour.slug, "--token-file", str(token_file))
    status, body = assistant.call("find_orders", {})

    assert "Подключение контура acme работает" in out
    assert (status, body["status"]) == (200, "ok"), body
    assert contour_token_of_sandbox(assistant) not in out


def contour_token_of_sandbox(assistant: Assistant) -> str:
    """The token the contour was made with (the fixture's: the demo shop's)."""
    from tools.contours.services import DEMO_TOKEN

    return DEMO_TOKEN


def test_a_bad_key_never_reaches_the_journal_or_the_answer(
    other_key: str, assistant: Assistant
) -> None:
    _, body = assistant.call("find_orders", {})

    assert other_key not in json.dumps(body)
