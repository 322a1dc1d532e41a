"""The Russian UI: the project's catalog (plural forms through ngettext, Django's admin messages
in «ёлочки»), its committed .mo in step with the .po, and Django's own pages in Russian."""

from __future__ import annotations

import gettext
import re
from pathlib import Path

import polib
import pytest
from django.contrib.auth.models import User
from django.test import Client, RequestFactory
from django.utils import timezone
from django.utils.translation import ngettext
from django.views.defaults import server_error

from audit.actors import SCAFFOLDING
from tools.contours.services import create_contour

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "locale" / "ru" / "LC_MESSAGES"


def test_the_committed_mo_says_what_the_po_says():
    po = polib.pofile(str(CATALOG / "django.po"))
    with (CATALOG / "django.mo").open("rb") as compiled:
        mo = gettext.GNUTranslations(compiled)

    # a number for each whole-number form (the fourth, for fractions, ngettext never picks)
    numbers = {0: 1, 1: 2, 2: 5}
    for entry in po:
        if entry.msgid_plural:
            for form, n in numbers.items():
                assert (
                    mo.ngettext(entry.msgid, entry.msgid_plural, n) == entry.msgstr_plural[form]
                ), entry.msgid
        else:
            assert mo.gettext(entry.msgid) == entry.msgstr, entry.msgid
    assert len(po) >= 20


@pytest.mark.parametrize(
    ("count", "word"),
    [
        (1, "отказ"),
        (2, "отказа"),
        (4, "отказа"),
        (5, "отказов"),
        (11, "отказов"),
        (21, "отказ"),
        (22, "отказа"),
        (111, "отказов"),
    ],
)
def test_counted_words_take_the_russian_form_after_a_number(count: int, word: str):
    assert ngettext("refusal", "refusals", count) == word


@pytest.fixture
def admin_http(db: None) -> Client:
    http = Client()
    http.force_login(User.objects.create_superuser("root", "root@example.test", "pw-root-123"))
    return http


def paginator_text(page: str) -> str:
    return " ".join(re.search(r'<p class="paginator">(.*?)</p>', page, re.S).group(1).split())


@pytest.mark.parametrize(
    ("contours", "text"), [(1, "1 контур"), (2, "2 контура"), (5, "5 контуров")]
)
def test_the_admin_counts_contours_in_russian(admin_http: Client, contours: int, text: str):
    for n in range(contours):
        create_contour(f"c{n}", mode="sandbox", actor=SCAFFOLDING)

    page = admin_http.get("/admin/tools/contour/").content.decode()

    assert paginator_text(page) == text


def test_the_user_pages_show_roles_not_groups_and_speak_russian(admin_http: Client):
    index = admin_http.get("/admin/").content.decode()
    listing = admin_http.get("/admin/auth/user/").content.decode()
    add = admin_http.get("/admin/auth/user/add/").content.decode()
    user = User.objects.get(username="root")
    change = admin_http.get(f"/admin/auth/user/{user.pk}/change/").content.decode()

    assert "/admin/auth/group/" not in index
    assert "Добавить пользователя" in listing and "Добавить пользователь<" not in listing
    assert "<title>Добавить пользователя" in add
    assert 'name="groups"' not in change and 'name="user_permissions"' not in change
    assert "Can add" not in change and "Люди контура" in change
    assert "| Изменить пользователя |" in change and "Пользователи и группы" not in change
    assert paginator_text(listing) == "1 пользователь"


def test_a_saved_user_is_announced_in_one_kind_of_quotes(admin_http: Client):
    user = User.objects.get(username="root")
    now = timezone.localtime()
    form = {
        "username": "root",
        "first_name": "",
        "last_name": "",
        "email": "root@example.test",
        "is_active": "on",
        "is_staff": "on",
        "is_superuser": "on",
        "date_joined_0": now.strftime("%d.%m.%Y"),
        "date_joined_1": now.strftime("%H:%M:%S"),
        "last_login_0": "",
        "last_login_1": "",
    }

    response = admin_http.post(f"/admin/auth/user/{user.pk}/change/", form, follow=True)

    texts = [re.sub(r"<[^>]+>", "", str(message)) for message in response.context["messages"]]
    assert texts == ["Сохранено: пользователь «root»."], texts


def test_django_error_pages_are_russian(settings, db: None):
    settings.DEBUG = False

    not_found = Client().get("/no/such/page").content.decode()
    failed = server_error(RequestFactory().get("/")).content.decode()

    assert "Страница не найдена" in not_found and "Not Found" not in not_found
    assert "Ошибка сервера" in failed and "Server Error" not in failed


def test_the_api_docs_page_is_titled_in_russian(db: None):
    page = Client().get("/api/docs/").content.decode()

    assert "<title>Шлюз Инвойсбокс для ИИ-ассистентов — API</title>" in page


def test_a_day_and_month_read_in_the_genitive(db: None):
    from datetime import date

    from django.utils.formats import date_format

    assert date_format(date(2026, 12, 3), "MONTH_DAY_FORMAT") == "3 декабря"
    assert date_format(date(2026, 12, 3), "DATE_FORMAT") == "3 декабря 2026 г."


def test_the_api_docs_page_explains_authorize_in_russian(db: None):
    page = Client().get("/api/docs/").content.decode()

    note = re.search(r'<div id="api-docs-note" lang="ru"[^>]*>(.*?)</div>', page, re.S)
    assert note, page[:2000]
    assert "«Authorize»" in note.group(1) and "ключ контура" in note.group(1)
    assert 'id="swagger-ui"' in page  # Swagger's own page is still there


def test_the_login_throttle_section_of_the_admin_is_named_in_russian(admin_http: Client):
    index = admin_http.get("/admin/").content.decode()

    assert "Блокировки входа" in index
    assert not re.search(r">\s*Axes\s*<", index, re.I)
