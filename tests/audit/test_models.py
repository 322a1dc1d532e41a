"""The model and the admin refuse to change or remove journal entries."""

from __future__ import annotations

import pytest
from django.urls import reverse

from audit.models import AppendOnlyError, JournalEntry

pytestmark = pytest.mark.django_db


def test_saving_an_existing_entry_is_refused(write):
    entry = write(message="original")
    entry.message = "rewritten"

    with pytest.raises(AppendOnlyError):
        entry.save()

    assert JournalEntry.objects.get(pk=entry.id).message == "original"


def test_deleting_an_entry_is_refused(write):
    entry = write()

    with pytest.raises(AppendOnlyError):
        entry.delete()

    assert JournalEntry.objects.filter(pk=entry.id).exists()


@pytest.mark.parametrize("operation", ["update", "delete", "bulk_update"])
def test_queryset_bulk_changes_are_refused(write, operation):
    entry = write(status="ok")
    qs = JournalEntry.objects.filter(pk=entry.id)
    calls = {
        "update": lambda: qs.update(status="error"),
        "delete": lambda: qs.delete(),
        "bulk_update": lambda: JournalEntry.objects.bulk_update([entry], ["status"]),
    }

    with pytest.raises(AppendOnlyError):
        calls[operation]()

    assert JournalEntry.objects.get(pk=entry.id).status == "ok"


def test_admin_lists_entries_but_offers_no_changes(admin_client, write):
    entry = write(code="limit_reached", operation_key="op-123")

    listing = admin_client.get(reverse("admin:audit_journalentry_changelist"), {"q": "op-123"})
    add = admin_client.get(reverse("admin:audit_journalentry_add"))
    change = admin_client.post(
        reverse("admin:audit_journalentry_change", args=[entry.id]), {"code": "ok"}
    )
    delete = admin_client.post(
        reverse("admin:audit_journalentry_delete", args=[entry.id]), {"post": "yes"}
    )

    assert listing.status_code == 200
    assert b"limit_reached" in listing.content
    assert add.status_code == 403
    assert change.status_code == 403
    assert delete.status_code == 403
    assert JournalEntry.objects.get(pk=entry.id).code == "limit_reached"


def test_a_hash_is_unique_through_one_named_index(write):
    from django.db import IntegrityError, connection, transaction

    entry = write()
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, "audit_journalentry")
    # PostgreSQL: no varchar_pattern_ops ("_like") index beside the unique one, which holds
    # the month partitions' key too (audit 0014: a partitioned table's unique keys must).
    key = ["hash", "at"] if connection.vendor == "postgresql" else ["hash"]
    on_hash = {name: c for name, c in constraints.items() if c["columns"][:1] == ["hash"]}
    assert list(on_hash) == ["audit_entry_hash"] and on_hash["audit_entry_hash"]["unique"]
    assert on_hash["audit_entry_hash"]["columns"] == key
    copy = JournalEntry(
        **{
            f.attname: getattr(entry, f.attname)
            for f in JournalEntry._meta.concrete_fields
            if not f.primary_key
        }
    )
    copy.seq += 1
    with pytest.raises(IntegrityError), transaction.atomic():
        copy.save()
