"""An auditor of A never sees a row of B: the list, both export formats, tokens naming
contours, and the admin's journal."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from audit.actors import SCAFFOLDING
from audit.models import AuditorToken, JournalEntry
from tools.contours.services import create_contour
from tools.people import grants as role_service

pytestmark = pytest.mark.django_db

EXPORT = "/api/v1/journal/export"


@pytest.fixture
def journal(write: Callable[..., JournalEntry]) -> dict[str, list[int]]:
    for slug in ("a", "b", "c"):
        create_contour(slug, mode="sandbox", actor=SCAFFOLDING)
    ids: dict[str, list[int]] = {"a": [], "b": [], "c": [], "": []}
    for slug in ("a", "b", "a", "c", "b", ""):
        ids[slug].append(write(contour=slug, tool="get_order").id)
    return ids


@pytest.fixture
def anna() -> User:
    """Auditor of a (and c), not of b."""
    person = User.objects.create_user("anna", password="pw-anna-123", is_staff=True)
    role_service.grant(person, "auditor", create_contour_or_get("a"), actor="test")
    role_service.grant(person, "auditor", create_contour_or_get("c"), actor="test")
    return person


def create_contour_or_get(slug: str):
    from tools.models import Contour

    return Contour.objects.get(slug=slug)


def session(user: User) -> Client:
    http = Client()
    http.force_login(user)
    return http


def streamed(response) -> str:
    return b"".join(response.streaming_content).decode()


def contours_in_csv(text: str) -> list[str]:
    return [row["contour"] for row in csv.DictReader(io.StringIO(text))]


def contours_in_jsonl(text: str) -> list[str]:
    return [json.loads(line)["contour"] for line in text.splitlines()]


def test_all_contours_means_the_permitted_ones_in_the_list_and_both_exports(
    journal: dict[str, list[int]], anna: User
):
    http = session(anna)

    listed = [row["contour"] for row in http.get("/api/v1/journal").json()["results"]]
    as_csv = contours_in_csv(streamed(http.get(EXPORT, {"format": "csv"})))
    as_jsonl = contours_in_jsonl(streamed(http.get(EXPORT, {"format": "jsonl"})))

    permitted = sorted(
        JournalEntry.objects.filter(contour__in=["a", "c"]).values_list("contour", flat=True)
    )
    assert sorted(listed) == sorted(as_csv) == sorted(as_jsonl) == permitted
    assert "b" not in permitted and "" not in permitted and len(permitted) >= 3


@pytest.mark.parametrize("path", ["/api/v1/journal", EXPORT])
@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_asking_for_another_contour_is_refused(
    journal: dict[str, list[int]], anna: User, path: str, fmt: str
):
    response = session(anna).get(path, {"contour": "b", "format": fmt})

    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"
    assert "b" not in response.json().get("hint", "").split(": ")[-1].split(", ")


def test_a_token_reads_only_the_contours_it_names(journal: dict[str, list[int]], anna: User):
    _, raw = AuditorToken.issue(anna, contours=["c"])
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}

    rows = contours_in_jsonl(streamed(Client().get(EXPORT, {"format": "jsonl"}, **bearer)))
    named_a = Client().get(EXPORT, {"format": "csv", "contour": "a"}, **bearer)

    assert set(rows) == {"c"} and len(rows) == JournalEntry.objects.filter(contour="c").count()
    assert named_a.status_code == 403  # anna audits a, but this token does not name it


def test_a_token_naming_a_contour_its_user_no_longer_audits_reads_nothing_of_it(
    journal: dict[str, list[int]], anna: User
):
    _, raw = AuditorToken.issue(anna, contours=["a", "c"])
    role_service.revoke(anna, "auditor", create_contour_or_get("a"), actor="test")

    rows = contours_in_csv(
        streamed(Client().get(EXPORT, {"format": "csv"}, HTTP_AUTHORIZATION=f"Bearer {raw}"))
    )

    assert set(rows) == {"c"}


def test_the_admin_journal_shows_an_auditor_only_their_contours(
    journal: dict[str, list[int]], anna: User
):
    http = session(anna)

    page = http.get("/admin/audit/journalentry/")
    foreign = http.get(f"/admin/audit/journalentry/{journal['b'][0]}/change/")
    own = http.get(f"/admin/audit/journalentry/{journal['a'][0]}/change/")

    shown = [entry.contour for entry in page.context["cl"].result_list]
    assert sorted(shown) == sorted(
        JournalEntry.objects.filter(contour__in=["a", "c"]).values_list("contour", flat=True)
    )
    assert "b" not in shown
    assert (foreign.status_code, own.status_code) == (404, 200)


def test_a_superuser_reads_every_contour_and_the_rows_naming_none(journal: dict[str, list[int]]):
    root = User.objects.create_superuser("root", password="pw-root-123")

    rows = contours_in_jsonl(streamed(session(root).get(EXPORT, {"format": "jsonl"})))

    assert sorted(rows) == sorted(["a", "b", "a", "c", "b", ""])
