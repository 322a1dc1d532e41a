"""Rows a database writer puts where record() never would: past a chain's head, or into
another contour's chain. verify_journal names them, journal_checkpoint refuses, the auditor's
export leaves them out."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from audit.actors import SCAFFOLDING
from audit.journal import entry_hash
from audit.models import ChainHead, JournalEntry
from tests.conftest import grant_everywhere
from tools.contours.services import create_contour

pytestmark = pytest.mark.django_db

EXPORT = "/api/v1/journal/export"


def verify() -> tuple[int, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("verify_journal", stdout=out, stderr=err)
    except SystemExit as exc:
        return int(exc.code or 0), err.getvalue()
    return 0, out.getvalue()


def forge(*, chain: str, contour: str, seq: int, prev_hash: str, signed: bool) -> JournalEntry:
    """A row inserted straight into the table (no head moved): signed with the journal key
    when the writer has it, a made-up hash when not."""
    entry = JournalEntry(
        at=timezone.now(),
        contour=contour,
        channel="rest",
        actor="key:x",
        tool="create_order",
        phase="execute",
        arguments={},
        status="ok",
        code="ok",
        message="счёт оплачен",
        chain=chain,
        seq=seq,
        form=2,
        prev_hash=prev_hash,
    )
    kid, secret = next(iter(settings.GATEWAY_JOURNAL_KEYS.items()))
    entry.key_id = kid
    entry.hash = entry_hash(prev_hash, entry, secret) if signed else "f" * 64
    entry.save()
    return entry


@pytest.fixture
def journal(write: Callable[..., JournalEntry]) -> list[JournalEntry]:
    create_contour("demo", mode="sandbox", actor=SCAFFOLDING)
    create_contour("shop", mode="sandbox", actor=SCAFFOLDING)
    return [write(contour="demo"), write(contour="demo"), write(contour="shop")]


def auditor_export() -> list[dict[str, str]]:
    anna = User.objects.create_user("anna", password="pw-12345678")
    grant_everywhere(anna, "auditors")
    http = Client()
    http.force_login(anna)
    response = http.get(EXPORT, {"format": "csv"})
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_a_row_far_past_the_head_breaks_verification(journal):
    head = ChainHead.objects.get(chain="demo")
    forged = forge(
        chain="demo",
        contour="demo",
        seq=head.last_seq + 1000,
        prev_hash=head.last_hash,
        signed=False,
    )

    code, err = verify()

    assert code == 1
    assert f"entry {forged.id}" in err and "past its head" in err


def test_a_checkpoint_is_not_taken_over_a_row_past_the_head(journal, tmp_path: Path):
    head = ChainHead.objects.get(chain="demo")
    forge(chain="demo", contour="demo", seq=head.last_seq + 5, prev_hash="0" * 64, signed=False)

    with pytest.raises(CommandError, match="past its head"):
        call_command("journal_checkpoint", "--output", str(tmp_path / "c.json"), stdout=StringIO())
    assert not list(tmp_path.iterdir())


def test_the_export_carries_no_row_past_a_head(journal):
    head = ChainHead.objects.get(chain="demo")
    forged = forge(
        chain="demo",
        contour="demo",
        seq=head.last_seq + 1000,
        prev_hash=head.last_hash,
        signed=False,
    )

    ids = [int(row["id"]) for row in auditor_export()]

    assert forged.id not in ids
    assert ids == [entry.id for entry in journal]


def test_the_export_carries_no_row_of_a_lane_without_a_head(journal):
    """A lane record() never opened (no head row): its row is verify_journal's finding only."""
    assert not ChainHead.objects.filter(chain="demo~7").exists()
    forged = forge(chain="demo~7", contour="demo", seq=1, prev_hash="0" * 64, signed=False)

    code, err = verify()
    ids = [int(row["id"]) for row in auditor_export()]

    assert code == 1 and f"entry {forged.id}" in err
    assert forged.id not in ids
    assert ids == [entry.id for entry in journal]


def test_a_signed_row_of_another_contour_in_a_chain_breaks_it(journal):
    head = ChainHead.objects.get(chain="demo")
    # A writer holding the key appends properly, head and all, but names another contour.
    forged = forge(
        chain="demo", contour="shop", seq=head.last_seq + 1, prev_hash=head.last_hash, signed=True
    )
    ChainHead.objects.filter(chain="demo").update(
        last_seq=forged.seq, last_id=forged.id, last_hash=forged.hash
    )

    code, err = verify()

    assert code == 1
    assert f"entry {forged.id}" in err and "names contour 'shop'" in err
    assert forged.id not in [int(row["id"]) for row in auditor_export()]


def test_an_untouched_journal_still_verifies_and_exports_whole(journal):
    assert verify()[0] == 0
    assert [int(row["id"]) for row in auditor_export()] == [entry.id for entry in journal]
