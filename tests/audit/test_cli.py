"""Changes made from the command line are journaled like the admin's: phase configure,
channel cli, who ran it, and never the key or token itself."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from audit.actors import SCAFFOLDING
from audit.models import JournalEntry
from audit.walk import verify_chain
from tools.contours.services import create_contour
from tools.models import ContourRole

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def configure_rows() -> list[tuple[str, str, str, str]]:
    return list(
        JournalEntry.objects.filter(phase="configure")
        .order_by("id")
        .values_list("channel", "contour", "code", "actor")
    )


def test_create_contour_and_create_api_key_are_journaled_without_the_key(
    settings: Any, tmp_path: Path
):
    settings.GATEWAY_STATE_DIR = str(tmp_path)

    run("create_contour", "acme", "--mode", "sandbox", "--toolsets", "read,write")
    key = run("create_api_key", "acme", "--label", "бухгалтерия").strip()

    rows = configure_rows()
    assert [(c, slug, code) for c, slug, code, _ in rows] == [
        ("cli", "acme", "contour_created"),
        ("cli", "acme", "api_key_issued"),
    ]
    assert all(actor.startswith("cli:") for *_, actor in rows)
    created, issued = JournalEntry.objects.filter(phase="configure").order_by("id")
    assert created.arguments["changes"]["toolsets"]["after"] == ["read", "write"]
    assert issued.arguments["prefix"] == key[: len(issued.arguments["prefix"])]
    assert issued.arguments["label"] == "бухгалтерия"
    everything = str(list(JournalEntry.objects.values()))
    assert key not in everything
    assert verify_chain() is None


def test_a_refused_command_journals_nothing(settings: Any, tmp_path: Path):
    settings.GATEWAY_STATE_DIR = str(tmp_path)
    with pytest.raises(Exception, match="unknown toolsets"):
        run("create_contour", "acme", "--mode", "sandbox", "--toolsets", "admin")
    assert configure_rows() == []


def test_seed_demo_journals_the_contour_and_its_key_once(tmp_path: Path):
    run("seed_demo", "--state-dir", str(tmp_path))
    run("seed_demo", "--state-dir", str(tmp_path))

    assert [(c, slug, code) for c, slug, code, _ in configure_rows()] == [
        ("cli", "demo", "contour_created"),
        ("cli", "demo", "api_key_issued"),
        ("cli", "demo", "role_granted"),
    ]


def test_create_auditor_token_is_journaled_without_the_token():
    contour = create_contour("books", mode="sandbox", actor=SCAFFOLDING)
    user = User.objects.create_user("alla")
    ContourRole.objects.create(user=user, contour=contour, role="auditor")

    token = run("create_auditor_token", "alla", "--label", "ревизия").strip()

    [entry] = JournalEntry.objects.filter(phase="configure", code="auditor_token_issued")
    assert (entry.channel, entry.code, entry.contour) == ("cli", "auditor_token_issued", "")
    assert entry.arguments["holder"] == "alla"
    assert entry.arguments["contours"] == ["books"]
    assert token not in str(list(JournalEntry.objects.values()))
