"""The management commands: create_contour, create_api_key and seed_demo."""

from __future__ import annotations

import io
import os
import re
import stat
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.utils import translation

from invoicebox.client import InvoiceboxError, make_client
from tests.conftest import order_args
from tools.contours.services import DEMO_MERCHANT_ID, DEMO_TOKEN
from tools.models import OFFICIAL_API_ORIGIN, ApiKey, Contour, ContourRole

pytestmark = pytest.mark.django_db

OWN_TOKEN = "9f86d081884c7d659a2feaa0c55ad015"
OWN_MERCHANT = "6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b"


@pytest.fixture(autouse=True)
def _own_state_dir(settings: Any, tmp_path: Path) -> None:
    # What a `make demo` of this checkout remembered (its port) must not leak into the tests.
    settings.GATEWAY_STATE_DIR = str(tmp_path)


def run(*args: str, **options: Any) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, **options)
    return out.getvalue()


# --------------------------------------------------------------------------- create_contour


def test_sandbox_contour_gets_its_own_sandbox_merchant_and_is_read_only() -> None:
    # when
    output = run("create_contour", "acme", "--mode", "sandbox")

    # then
    contour = Contour.objects.get(slug="acme")
    assert contour.mode == "sandbox"
    assert contour.name == "acme"
    assert contour.api_token.startswith("sbx_") and contour.api_token != DEMO_TOKEN
    assert contour.merchant_id != DEMO_MERCHANT_ID
    assert contour.base_url == settings.INVOICEBOX_SANDBOX_BASE_URL.rstrip("/")
    assert contour.toolsets == ["read"]
    assert contour.api_token not in output
    assert output.splitlines()[0] == (
        f"контур acme: режим sandbox, наборы read, "
        f"адрес API {contour.base_url}, токен ***{contour.api_token[-4:]}"
    )
    assert f"магазин песочницы {contour.merchant_id}: свой у этого контура" in output


def test_two_sandbox_contours_do_not_see_each_others_orders() -> None:
    # given: two contours made by the command, each with a key
    run("create_contour", "first", "--mode", "sandbox", "--toolsets", "read,write")
    run("create_contour", "second", "--mode", "sandbox")
    first, second = (Client(), Client())
    key_a = run("create_api_key", "first").strip()
    key_b = run("create_api_key", "second").strip()

    def call(http: Client, key: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return http.post(
            "/api/v1/call",
            {"name": name, "arguments": arguments},
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {key}",
        ).json()

    # when: the first issues an order
    args = order_args()
    token = call(first, key_a, "create_order", args)["confirmation"]["token"]
    made = call(first, key_a, "create_order", {**args, "confirmation_token": token})
    assert made["status"] == "ok", made

    # then: the first finds it, the second does not
    assert call(first, key_a, "find_orders", {})["data"]["orders"]
    assert call(second, key_b, "find_orders", {})["data"]["orders"] == []


def test_create_contour_prints_the_port_make_demo_serves_on(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # given: `make demo PORT=9123` is serving (this process stands in for it); no PORT here
    monkeypatch.delenv("PORT", raising=False)
    monkeypatch.delenv("GATEWAY_SITE_URL", raising=False)
    monkeypatch.delenv("INVOICEBOX_SANDBOX_BASE_URL", raising=False)
    (tmp_path / "site-url").write_text(f"http://127.0.0.1:9123\n{os.getpid()}\n")

    # when
    output = run("create_contour", "acme", "--mode", "sandbox")

    # then
    contour = Contour.objects.get(slug="acme")
    assert contour.base_url == "http://127.0.0.1:9123/sandbox/invoicebox"
    assert "шлюз: http://127.0.0.1:9123/api/v1/ и http://127.0.0.1:9123/mcp" in output


@pytest.mark.parametrize("record", ["gone", "old"])
def test_a_stopped_servers_port_is_not_printed(
    tmp_path: Path, monkeypatch: Any, record: str
) -> None:
    # given: the server that served on 9123 has stopped (or an older version left its URL alone)
    monkeypatch.delenv("PORT", raising=False)
    monkeypatch.delenv("GATEWAY_SITE_URL", raising=False)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (tmp_path / "site-url").write_text(
        "http://127.0.0.1:9123\n" + (f"{gone.pid}\n" if record == "gone" else "")
    )

    output = run("create_contour", "acme", "--mode", "sandbox")

    assert "9123" not in output
    assert f"шлюз: {settings.GATEWAY_SITE_URL}/api/v1/" in output


def test_the_server_records_its_url_while_it_serves_and_takes_it_away(
    tmp_path: Path, transactional_db: None
):
    from starlette.testclient import TestClient

    from config.asgi import application

    record = tmp_path / "site-url"
    with TestClient(application, base_url="http://127.0.0.1:8000"):
        assert record.read_text().split() == [settings.GATEWAY_SITE_URL, str(os.getpid())]
    assert not record.exists()


def test_toolsets_option_enables_writes() -> None:
    # when
    output = run("create_contour", "acme", "--mode", "sandbox", "--toolsets", "read,write")

    # then
    assert Contour.objects.get(slug="acme").toolsets == ["read", "write"]
    assert "наборы read,write" in output


def test_unknown_toolset_is_refused_and_nothing_created() -> None:
    # when
    with pytest.raises(CommandError, match="unknown toolsets admin"):
        run("create_contour", "acme", "--mode", "sandbox", "--toolsets", "read,admin")

    # then
    assert not Contour.objects.exists()


def test_existing_slug_is_refused_and_the_contour_kept() -> None:
    # given
    run("create_contour", "acme", "--mode", "sandbox")

    # when
    with pytest.raises(CommandError, match="уже есть"):
        run("create_contour", "acme", "--mode", "sandbox", "--toolsets", "read,write")

    # then
    assert list(Contour.objects.values_list("slug", "toolsets")) == [("acme", ["read"])]


def test_production_without_a_token_is_refused() -> None:
    # when
    with pytest.raises(CommandError, match="production needs"):
        run("create_contour", "shop", "--mode", "production", "--merchant-id", OWN_MERCHANT)

    # then
    assert not Contour.objects.exists()


def test_token_file_is_stored_but_only_its_masked_form_is_shown(tmp_path: Path) -> None:
    # given
    token_file = tmp_path / "token"
    token_file.write_text(f"  {OWN_TOKEN}\n")

    # when
    output = run(
        "create_contour",
        "shop",
        "--mode",
        "production",
        "--token-file",
        str(token_file),
        "--merchant-id",
        OWN_MERCHANT,
    )

    # then
    contour = Contour.objects.get(slug="shop")
    assert contour.api_token == OWN_TOKEN
    assert contour.merchant_id == OWN_MERCHANT
    assert contour.base_url == OFFICIAL_API_ORIGIN
    assert OWN_TOKEN not in output
    assert OWN_TOKEN[:-4] not in output
    assert f"токен ***{OWN_TOKEN[-4:]}" in output


def test_token_can_come_from_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    # given
    monkeypatch.setattr(sys, "stdin", io.StringIO(OWN_TOKEN + "\n"))

    # when
    output = run(
        "create_contour",
        "shop",
        "--mode",
        "production",
        "--token-file",
        "-",
        "--merchant-id",
        OWN_MERCHANT,
    )

    # then
    assert Contour.objects.get(slug="shop").api_token == OWN_TOKEN
    assert OWN_TOKEN not in output


def test_empty_token_file_is_refused(tmp_path: Path) -> None:
    # given
    token_file = tmp_path / "token"
    token_file.write_text(" \n")

    # when
    with pytest.raises(CommandError, match="пуст"):
        run(
            "create_contour",
            "shop",
            "--mode",
            "production",
            "--token-file",
            str(token_file),
            "--merchant-id",
            OWN_MERCHANT,
        )

    # then
    assert not Contour.objects.exists()


def test_missing_token_file_is_refused_in_russian_naming_the_path(tmp_path: Path) -> None:
    absent = tmp_path / "absent"
    with pytest.raises(CommandError, match=f"файла с токеном {absent} нет"):
        run("create_contour", "shop", "--mode", "sandbox", "--token-file", str(absent))
    assert not Contour.objects.exists()


def test_sandbox_contour_with_its_own_token_can_call_the_sandbox(tmp_path: Path) -> None:
    # given
    token_file = tmp_path / "token"
    token_file.write_text(OWN_TOKEN)
    with (
        make_client(
            base_url=settings.INVOICEBOX_SANDBOX_BASE_URL, token=OWN_TOKEN, merchant_id=OWN_MERCHANT
        ) as before,
        pytest.raises(InvoiceboxError) as refused,
    ):
        before.check_auth()
    assert refused.value.kind == "unauthorized"

    # when
    run(
        "create_contour",
        "own",
        "--mode",
        "sandbox",
        "--token-file",
        str(token_file),
        "--merchant-id",
        OWN_MERCHANT,
    )

    # then
    contour = Contour.objects.get(slug="own")
    with make_client(
        base_url=contour.base_url, token=contour.api_token, merchant_id=contour.merchant_id
    ) as client:
        assert uuid.UUID(client.check_auth())
        assert client.find_orders().orders == []


# --------------------------------------------------------------------------- create_api_key


def test_create_api_key_prints_only_a_working_key_that_is_not_stored() -> None:
    # given
    run("create_contour", "acme", "--mode", "sandbox")

    # when
    output = run("create_api_key", "acme", "--label", "claude")

    # then
    lines = output.splitlines()
    assert len(lines) == 1
    key = lines[0]
    assert re.fullmatch(r"ibg_[A-Za-z0-9_-]{40,}", key)
    found = ApiKey.authenticate(key)
    assert found is not None
    assert (found.contour.slug, found.label) == ("acme", "claude")
    assert found.key_hash != key
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {ApiKey._meta.db_table}")  # noqa: S608 - our own table
        rows = cursor.fetchall()
    assert len(rows) == 1
    assert not [cell for cell in rows[0] if key in str(cell)]


def test_create_api_key_for_an_unknown_contour_is_refused() -> None:
    with pytest.raises(CommandError, match="нет"):
        run("create_api_key", "nobody")
    assert not ApiKey.objects.exists()


# --------------------------------------------------------------------------- seed_demo


def _printed(output: str, label: str) -> str:
    match = re.search(rf"^{label}\s+(\S+)", output, re.M)
    assert match, output
    return match.group(1)


def test_seed_demo_twice_keeps_one_contour_one_key_and_one_admin(tmp_path: Path) -> None:
    # when
    first = run("seed_demo", "--state-dir", str(tmp_path))
    second = run("seed_demo", "--state-dir", str(tmp_path))

    # then
    contour = Contour.objects.get()
    assert (contour.slug, contour.mode, contour.toolsets) == ("demo", "sandbox", ["read", "write"])
    assert contour.base_url == settings.INVOICEBOX_SANDBOX_BASE_URL.rstrip("/")
    key = _printed(first, "API key:")
    assert key == _printed(second, "API key:")
    found = ApiKey.authenticate(key)
    assert found is not None and found.contour_id == contour.id
    assert ApiKey.objects.count() == 1
    (key_file,) = tmp_path.glob("demo/*/demo-api-key")
    assert key_file.read_text().strip() == key
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE((key_file.parent / "demo-admin").stat().st_mode) == 0o600

    admins = get_user_model().objects.filter(is_superuser=True)
    assert list(admins.values_list("username", "is_staff")) == [("admin", True)]
    password = re.search(r"login admin / password (\S+)", second)
    assert password, second
    assert password.group(1) in first
    assert Client().login(username="admin", password=password.group(1))
    assert not Client().login(username="admin", password=password.group(1) + "x")
    # The demo key is a command's: its writes are approved by the demo's operator, no superuser.
    assert ApiKey.objects.get().issued_by_command
    operator = re.search(r"login operator / password (\S+)", second)
    assert operator and operator.group(1) in first
    assert Client().login(username="operator", password=operator.group(1))
    assert list(
        ContourRole.objects.filter(user__username="operator").values_list("role", "contour__slug")
    ) == [("operator", "demo")]


def test_seed_demo_repairs_an_admin_password_that_no_longer_works(tmp_path: Path) -> None:
    # given: the admin's password was changed after the demo saved its own
    first = run("seed_demo", "--state-dir", str(tmp_path))
    old = re.search(r"login admin / password (\S+)", first).group(1)
    admin = get_user_model().objects.get(username="admin")
    admin.set_password("changed-by-hand")
    admin.save()

    # when
    again = run("seed_demo", "--state-dir", str(tmp_path))

    # then: what it prints works, the stale one does not; the key is unchanged
    printed = re.search(r"login admin / password (\S+)", again).group(1)
    assert printed != old
    assert Client().login(username="admin", password=printed)
    assert _printed(again, "API key:") == _printed(first, "API key:")
    assert ApiKey.objects.count() == 1


def test_commands_speak_russian_and_english_where_the_language_says() -> None:
    with pytest.raises(CommandError, match=r"^пользователя 'nobody' нет$"):
        run("reset_second_factor", "nobody")
    output = run("create_contour", "acme", "--mode", "sandbox")
    assert output.startswith("контур acme: режим sandbox, наборы read, адрес API ")

    with translation.override("en"):
        with pytest.raises(CommandError, match=r"^user 'nobody' does not exist$"):
            run("reset_second_factor", "nobody")
