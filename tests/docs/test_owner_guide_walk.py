"""docs/owner-guide.md walked in its order on a fresh database, through the real paths, to a
confirmed invoice (issue 42, «Done when»): the guide's own commands (call_command), the pages
with Django's test Client, the assistant over REST /api/v1/call, and the auditor's signed export
checked by tools/verify_export.py in a process of its own. Prints how long the walk took."""

from __future__ import annotations

import html
import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pyotp
import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.management import call_command
from django.test import Client

from sandbox.models import SandboxOrder
from tests.conftest import Assistant, order_args
from tests.docs.helpers import DOCS, ROOT
from tests.tools.admin.test_owner_admin import change_url, contour_form
from tools.models import Contour, PendingConfirmation

pytestmark = pytest.mark.django_db(transaction=True)

GUIDE = (DOCS / "owner-guide.md").read_text(encoding="utf-8")
PASSWORD = "Длинный-пароль-владельца-2026"


def run(*args: str) -> str:
    """A command of the guide, as typed (the arguments are checked to be in the guide)."""
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue()


def in_guide(command: str) -> None:
    assert command in " ".join(GUIDE.replace("\\\n", " ").split()), command


def app_of(otpauth: str) -> pyotp.TOTP:
    """The authenticator app the person adds the add_totp link to."""
    line = next(line for line in otpauth.splitlines() if line.startswith("otpauth://"))
    return pyotp.TOTP(parse_qs(urlsplit(line).query)["secret"][0])


def log_in(username: str) -> Client:
    """Through the login page with the password, as a person does."""
    http = Client()
    done = http.post("/accounts/login/", {"username": username, "password": PASSWORD})
    assert done.status_code == 302, html.unescape(done.content.decode())[:1500]
    return http


def step_up(http: Client, url: str, refused: Any, app: pyotp.TOTP, steps: int = 0) -> Any:
    """A save held for a fresh second factor, finished with the code as the check page posts it
    (steps: which later code, each check needs one not used before); steps=0: a check was made
    within GATEWAY_STEP_UP_SECONDS, so the save goes through without asking."""
    assert refused.status_code == 302, html.unescape(refused.content.decode())[:2000]
    asked = refused["Location"].startswith("/account/second-factor/verify/")
    assert asked == bool(steps), refused["Location"]
    if not asked:
        return refused
    held = parse_qs(urlsplit(refused["Location"]).query)["held"][0]
    return http.post(
        url, {"_step_up_held": held, "_step_up_code": app.at(time.time() + 30 * steps)}
    )


def test_the_owner_guide_from_a_token_to_a_confirmed_invoice(settings: Any, tmp_path: Path):
    settings.GATEWAY_REQUIRE_SECOND_FACTOR = True  # production's rule (guide, step 2)
    started = time.monotonic()

    # 1. Токен и контур: a contour for reading only, checked; the token typed again from a file.
    in_guide(
        "create_contour shop --mode production --merchant-id <UUID> --token-file token.txt "
        "--toolsets read"
    )
    run("create_contour", "shop", "--mode", "sandbox", "--toolsets", "read")
    shop = Contour.objects.get(slug="shop")
    assert shop.toolsets == ["read"]
    checked = run("check_contour", "shop")
    token = tmp_path / "token.txt"
    token.write_text(shop.api_token + "\r\n", encoding="utf-8-sig")  # as Notepad saves it
    in_guide("set_contour_token shop --token-file token.txt")
    run("set_contour_token", "shop", "--token-file", str(token))
    assert "[да] токен" in checked and "Подключение контура shop работает" in checked, checked
    assert "[?] магазин: счетов ещё нет" in checked
    assert "у магазина нет ни одного счёта" in " ".join(GUIDE.split())

    # 2. Второй фактор: the owner, a password, a device prepared off the site, confirmed on the page.
    in_guide("grant anna owner shop --create --email anna@shop.example")
    run("grant", "anna", "owner", "shop", "--create", "--email", "anna@shop.example")
    set_password("anna")  # `changepassword anna` asks on a terminal
    in_guide("add_totp anna")
    anna_app = app_of(run("add_totp", "anna"))
    anna = log_in("anna")
    confirmed = anna.post(
        "/account/second-factor/",
        {"action": "confirm_prepared", "code": anna_app.now()},
        follow=True,
    )
    assert "Приложение подключено" in html.unescape(confirmed.content.decode())

    # 3. Люди и роли: the operator with his own device, the auditor.
    in_guide("grant oleg operator shop --create --email oleg@shop.example")
    run("grant", "oleg", "operator", "shop", "--create", "--email", "oleg@shop.example")
    set_password("oleg")
    oleg_app = app_of(run("add_totp", "oleg"))
    oleg = log_in("oleg")
    confirmed = oleg.post(
        "/account/second-factor/",
        {"action": "confirm_prepared", "code": oleg_app.now()},
        follow=True,
    )
    assert "Приложение подключено" in html.unescape(confirmed.content.decode())
    in_guide("grant ira auditor shop --create --email ira@shop.example")
    run("grant", "ira", "auditor", "shop", "--create", "--email", "ira@shop.example")

    # 4. Включить запись: in the admin, «Включить запись для ассистента?», then a fresh factor.
    # Confirming the device was a check of it (within GATEWAY_STEP_UP_SECONDS nothing more is
    # asked); Anna comes back to the admin later, in a session of its own.
    anna = log_in("anna")
    url = change_url(shop)
    asked = anna.post(url, contour_form(shop, toolsets=["read", "write"]))
    page = html.unescape(asked.content.decode())
    assert "Включить запись для ассистента?" in page, page[:2000]
    confirm = re.search(r'name="_confirm_writes" value="([^"]+)"', page).group(1)
    saved = step_up(anna, url, anna.post(url, {"_confirm_writes": confirm}), anna_app, 1)
    assert saved.status_code == 302, html.unescape(saved.content.decode())[:2000]
    shop.refresh_from_db()
    assert shop.toolsets == ["read", "write"]

    # 5. Потолки и порог: roubles on the page; over 100,00 ₽ waits for the operator.
    ceilings = {"ceilings-TOTAL_FORMS": 3, "ceilings-INITIAL_FORMS": 0}
    for index, (kind, currency, limit) in enumerate(
        (("per_order", "RUB", "1 000,00"), ("per_day", "RUB", "5 000,00"), ("per_hour", "", "10"))
    ):
        ceilings.update(
            {
                f"ceilings-{index}-contour": shop.pk,
                f"ceilings-{index}-kind": kind,
                f"ceilings-{index}-currency": currency,
                f"ceilings-{index}-limit": limit,
            }
        )
    form = {**contour_form(shop), "approval_thresholds_RUB": "100,00", **ceilings}
    saved = step_up(anna, url, anna.post(url, form), anna_app)  # fresh from step 4
    assert saved.status_code == 302, html.unescape(saved.content.decode())[:3000]
    shop.refresh_from_db()
    assert shop.approval_thresholds["RUB"] == 10000
    assert sorted(c.kind for c in shop.ceilings.all()) == ["per_day", "per_hour", "per_order"]

    # 6. Ключ ассистента: held by Anna, who therefore may not approve what it prepares.
    # The page the guide names first («Ключи API» → «Добавить ключ API», «владелец ключа»).
    keys = html.unescape(anna.get("/admin/tools/apikey/").content.decode())
    new_key = html.unescape(anna.get("/admin/tools/apikey/add/").content.decode())
    assert "«Ключи API» → «Добавить ключ API»" in GUIDE and "Добавить ключ API" in keys
    assert "«владелец ключа»" in GUIDE and "владелец ключа:" in new_key
    in_guide("create_api_key shop --user <держатель>")
    key = run("create_api_key", "shop", "--user", "anna").strip()
    assert key.startswith("ibg_")
    assistant = Assistant(Client(), key, shop)

    # 9. Первый счёт: summary and token; over the threshold, so Oleg approves with his code.
    args = order_args()
    status, first = assistant.call("create_order", args)
    assert (status, first["status"]) == (200, "confirmation_required"), first
    cid = str(first["confirmation"]["id"])
    assert [m.to for m in mail.outbox if "/approvals/" in m.body] == [["oleg@shop.example"]]
    assert "/approvals/" in GUIDE
    refused = anna.post(
        f"/approvals/{cid}/", {"decision": "approve", "otp_code": anna_app.at(time.time() + 60)}
    )
    assert PendingConfirmation.objects.get(pk=cid).status == "pending", refused.status_code
    decided = oleg.post(
        f"/approvals/{cid}/",
        {"decision": "approve", "reason": "", "otp_code": oleg_app.at(time.time() + 30)},
        follow=True,
    )
    assert "Одобрено" in html.unescape(decided.content.decode())
    status, done = assistant.call(
        "create_order", {**args, "confirmation_token": first["confirmation"]["token"]}
    )
    assert (status, done["status"]) == (200, "ok"), done
    assert SandboxOrder.objects.filter(order_id=done["data"]["order_id"]).exists()
    assert "[да] магазин" in run("check_contour", "shop")  # with an invoice, the shop matches

    # 8. Аудитор: a signed export and the public key, checked without the server.
    in_guide("export_journal --format jsonl --signed --contour shop > export.jsonl")
    in_guide("python tools/verify_export.py --public-key journal-public.pem export.jsonl")
    (tmp_path / "export.jsonl").write_text(
        run("export_journal", "--format", "jsonl", "--signed", "--contour", "shop"),
        encoding="utf-8",
    )
    (tmp_path / "journal-public.pem").write_text(run("journal_public_key"), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "PYTHONPATH"))}
    verified = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "verify_export.py"),
            "--public-key",
            "journal-public.pem",
            "export.jsonl",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert verified.returncode == 0, verified.stderr
    assert "ok:" in verified.stdout
    in_guide("create_auditor_token ira --contours shop")
    auditor = run("create_auditor_token", "ira", "--contours", "shop").strip()
    journal = Client().get("/api/v1/journal/export", HTTP_AUTHORIZATION=f"Bearer {auditor}")
    assert journal.status_code == 200 and b"create_order" in b"".join(journal.streaming_content)

    took = time.monotonic() - started
    print(f"\nowner-guide walk: {took:.1f} s")
    assert took < 120


def set_password(username: str) -> None:
    user = User.objects.get(username=username)
    user.set_password(PASSWORD)
    user.save()
