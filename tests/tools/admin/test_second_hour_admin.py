"""The owner's second hour in the admin: a new contour starts from the same defaults as
`create_contour`, keeps a typed token across an error, the writes page shows the ceilings of the
same form, operators are asked for their email, and the connection is checked from the page."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from audit.actors import SCAFFOLDING
from tests.tools.admin.test_owner_admin import change_url, contour_form, thresholds_form
from tests.tools.conftest import logged_in
from tools.contours.services import create_contour, new_contour_defaults
from tools.models import Contour, ContourRole

pytestmark = pytest.mark.django_db

TOKEN = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
EMPTY_INLINES = {
    f"{p}-{k}": v
    for p in ("ceilings", "api_keys", "roles")
    for k, v in (
        ("TOTAL_FORMS", 0),
        ("INITIAL_FORMS", 0),
        ("MIN_NUM_FORMS", 0),
        ("MAX_NUM_FORMS", 1000),
    )
}


@pytest.fixture
def root(make_user: Callable[..., User]) -> Client:
    return logged_in(make_user("root", staff=True, superuser=True))


def initial_post(page: Any, **changes: Any) -> dict[str, Any]:
    """What a browser sends for the add form as shown, untouched fields included."""
    form = page.context["adminform"].form
    data: dict[str, Any] = {}
    for name, field in form.fields.items():
        value = form[name].value()
        if name == "approval_thresholds":
            data.update(thresholds_form(value or {}))
        elif isinstance(value, list):
            data[name] = value
        elif isinstance(value, bool):
            if value:
                data[name] = "on"
        elif value is not None and not field.widget.is_hidden:
            data[name] = value
    return {**data, **EMPTY_INLINES, "_save": "Сохранить", **changes}


def test_the_add_form_starts_where_create_contour_starts(root: Client):
    # when the owner opens the form and saves it with a code and a name only
    page = root.get("/admin/tools/contour/add/")
    html = page.content.decode()
    response = root.post(
        "/admin/tools/contour/add/", initial_post(page, slug="admin-made", name="Лавка")
    )

    # then the form showed and stored the command's defaults
    assert response.status_code == 302, response.content.decode()[:2000]
    assert re.search(r'value="RUB"[^>]*checked|checked[^>]*value="RUB"', html)
    assert 'name="approval_thresholds_RUB" value="100' in html.replace("\u00a0", " ")
    assert re.search(r'value="read"[^>]*(checked[^>]*disabled|disabled[^>]*checked)', html)
    by_admin = Contour.objects.get(slug="admin-made")
    by_command = create_contour(
        "command-made", mode="sandbox", own_sandbox_merchant=True, actor=SCAFFOLDING
    )
    defaults = new_contour_defaults("sandbox")
    for name in (
        "base_url",
        "toolsets",
        "allowed_currencies",
        "approval_thresholds",
        "confirmation_ttl_seconds",
        "approval_window_hours",
        "dedup_window_seconds",
        "time_zone",
    ):
        assert getattr(by_admin, name) == getattr(by_command, name) == defaults[name], name
    assert defaults["approval_thresholds"] == {"RUB": settings.GATEWAY_APPROVAL_THRESHOLD_KOPECKS}


def test_an_empty_address_takes_the_modes_own_and_custom_asks_without_a_repr(root: Client):
    page = root.get("/admin/tools/contour/add/")

    custom = root.post(
        "/admin/tools/contour/add/",
        initial_post(
            page,
            slug="proxy",
            name="Прокси",
            mode="custom",
            base_url="",
            api_token=TOKEN,
            merchant_id=str(uuid.uuid4()),
        ),
    ).content.decode()
    wrong = root.post(
        "/admin/tools/contour/add/",
        initial_post(
            page, slug="wrong", name="Не тот", mode="sandbox", base_url="https://example.org/"
        ),
    ).content.decode()

    assert "в режиме custom укажите адрес" in custom
    assert "а указано «https://example.org»" in wrong
    assert "получен &#x27;" not in wrong and "получен '" not in wrong
    assert not Contour.objects.filter(slug__in=["proxy", "wrong"]).exists()


def test_a_typed_token_survives_an_error_sealed_and_is_saved_on_the_next_submit(root: Client):
    page = root.get("/admin/tools/contour/add/")
    form = initial_post(
        page,
        slug="shop",
        name="Магазин",
        mode="production",
        base_url="",
        api_token=TOKEN,
        merchant_id="not-a-uuid",
    )

    # when the form comes back with an error
    again = root.post("/admin/tools/contour/add/", form)
    html = again.content.decode()

    # then the token is not in the page, but carried sealed
    assert again.status_code == 200 and TOKEN not in html
    sealed = re.search(r'name="api_token_sealed" value="([^"]+)"', html).group(1)
    assert sealed.startswith("fernet:")
    assert "токен из прошлой отправки формы сохранён" in html

    # when the owner fixes the shop id only
    merchant = str(uuid.uuid4())
    done = root.post(
        "/admin/tools/contour/add/",
        {**form, "api_token": "", "api_token_sealed": sealed, "merchant_id": merchant},
    )

    # then
    assert done.status_code == 302, done.content.decode()[:2000]
    shop = Contour.objects.get(slug="shop")
    assert (shop.api_token, shop.merchant_id) == (TOKEN, merchant)
    assert shop.base_url == "https://api.invoicebox.ru"


def test_a_forged_sealed_value_is_not_a_token(root: Client):
    page = root.get("/admin/tools/contour/add/")
    html = root.post(
        "/admin/tools/contour/add/",
        initial_post(
            page,
            slug="shop",
            name="Магазин",
            mode="production",
            api_token="",
            api_token_sealed=TOKEN,
            merchant_id=str(uuid.uuid4()),
        ),
    ).content.decode()

    assert "для нового контура нужен токен" in html
    assert not Contour.objects.filter(slug="shop").exists()


def test_the_writes_page_lists_the_ceilings_of_the_same_form(root: Client):
    contour = create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    form = contour_form(
        contour,
        toolsets=["read", "write"],
        **{
            "ceilings-TOTAL_FORMS": 2,
            "ceilings-0-kind": "per_day",
            "ceilings-0-currency": "RUB",
            "ceilings-0-limit": "500 000,00",
            "ceilings-1-kind": "per_hour",
            "ceilings-1-currency": "",
            "ceilings-1-limit": "20",
        },
    )

    page = root.post(change_url(contour), form).content.decode().replace("\u00a0", " ")

    assert "Включить запись" in page and "Потолков нет" not in page
    assert "сумма за сутки: 500 000,00 ₽" in page and "число записей за час: 20" in page
    assert not contour.ceilings.exists()  # nothing saved before the owner confirms


def test_an_operator_without_email_is_warned_about_on_the_contour_page(
    root: Client, make_user: Callable[..., User]
):
    contour = create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    make_user("olga", "operators")
    reachable = make_user("petr", "operators")
    reachable.email = "petr@example.org"
    reachable.save()

    page = root.get(change_url(contour)).content.decode()

    warning = re.search(r'<p class="errornote" id="unreachable-operators">(.*?)</p>', page, re.S)
    assert warning and "olga" in warning.group(1) and "petr" not in warning.group(1)
    assert 'name="roles-0-email"' in page


def test_check_connection_reports_in_russian_on_the_contour_page(root: Client):
    good = create_contour("good", mode="sandbox", own_sandbox_merchant=True, actor=SCAFFOLDING)
    bad = create_contour("bad", mode="sandbox", own_sandbox_merchant=True, actor=SCAFFOLDING)
    bad.api_token = "29078-API:" + "ab" * 16
    bad.save()

    ok = root.post(f"/admin/tools/contour/{good.pk}/check/", follow=True)
    failed = root.post(f"/admin/tools/contour/{bad.pk}/check/", follow=True)

    ok_texts = [str(m) for m in ok.context["messages"]]
    failed_texts = [str(m) for m in failed.context["messages"]]
    assert "Подключение контура good работает" in ok_texts
    assert any("токен API l3" in text for text in failed_texts)
    assert failed.redirect_chain[-1][0] == change_url(bad)


def test_an_owner_checks_only_their_own_contour(owner: Client):
    # given: the owner fixture owns every contour made during the test; one is taken back
    mine = create_contour("mine", mode="sandbox", actor=SCAFFOLDING)
    theirs = create_contour("theirs", mode="sandbox", actor=SCAFFOLDING)
    ContourRole.objects.filter(contour=theirs).delete()

    assert owner.post(f"/admin/tools/contour/{theirs.pk}/check/").status_code == 404
    assert owner.post(f"/admin/tools/contour/{mine.pk}/check/").status_code == 302


def test_an_unchanged_operator_without_email_does_not_block_saving_the_contour(
    root: Client, make_user: Callable[..., User]
):
    contour = create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    make_user("olga", "operators")

    response = root.post(
        change_url(contour),
        contour_form(
            contour,
            name="Лавка 2",
            **{
                "roles-0-user": contour.roles.get().user_id,
                "roles-0-role": "operator",
                "roles-0-email": "",
            },
        ),
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    assert Contour.objects.get(pk=contour.pk).name == "Лавка 2"
