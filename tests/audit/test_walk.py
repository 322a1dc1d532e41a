"""verify_journal --checkpoint costs what is new: only entries after the checkpoint are read."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import JournalEntry

pytestmark = pytest.mark.django_db

TABLE = JournalEntry._meta.db_table


def _verify(*args: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("verify_journal", *args, stdout=out, stderr=err)
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


@pytest.fixture
def checkpointed(write, tmp_path) -> Path:
    for n in range(40):
        write(contour="demo" if n % 2 else "shop", arguments={"n": n})
    path = tmp_path / "cp.json"
    call_command("journal_checkpoint", "--output", str(path), stdout=StringIO())
    return path


def test_only_the_entries_after_the_checkpoint_are_read(checkpointed, write):
    for n in range(5):
        write(contour="demo", arguments={"new": n})

    with CaptureQueriesContext(connection) as queries:
        code, out, err = _verify("--checkpoint", str(checkpointed))

    assert (code, err) == (0, "")
    assert out.startswith("ok: 5 entries after the checkpoints")
    walked = [
        q["sql"]
        for q in queries.captured_queries
        if f'FROM "{TABLE}"' in q["sql"] and "ORDER BY" in q["sql"] and '"seq" >' in q["sql"]
    ]
    assert walked, "each chain is read after its checkpoint's place"
    assert not any(
        "DISTINCT" in q["sql"].upper() for q in queries.captured_queries if f'"{TABLE}"' in q["sql"]
    )
    # The full walk is still there, and reads everything.
    assert _verify("--full", "--checkpoint", str(checkpointed))[1].startswith("ok: 45 entries")
    assert _verify()[1].startswith("ok: 45 entries")


def test_a_change_after_the_checkpoint_is_found(checkpointed, write, raw_sql):
    new = [write(contour="demo", arguments={"new": n}) for n in range(3)]
    raw_sql("UPDATE {table} SET message = %s WHERE id = %s", ["подменено", new[1].id])

    code, _, err = _verify("--checkpoint", str(checkpointed))

    assert code == 1
    assert f"broken: entry {new[1].id} hash does not match its content" in err


def test_a_change_before_the_checkpoint_needs_the_full_walk(checkpointed, raw_sql):
    old = JournalEntry.objects.filter(contour="demo").order_by("seq")[3]
    raw_sql("UPDATE {table} SET message = %s WHERE id = %s", ["подменено", old.id])

    assert _verify("--checkpoint", str(checkpointed))[0] == 0  # sealed history: not re-read
    code, _, err = _verify("--full", "--checkpoint", str(checkpointed))
    assert code == 1 and f"broken: entry {old.id}" in err


def test_a_rewritten_checkpoint_entry_is_found_by_one_lookup(checkpointed, raw_sql):
    last = JournalEntry.objects.filter(chain="demo").order_by("-seq").first()
    raw_sql("UPDATE {table} SET hash = %s WHERE id = %s", ["a" * 64, last.id])

    code, _, err = _verify("--checkpoint", str(checkpointed))

    assert code == 1
    assert f"broken: entry {last.id} hash" in err and "differs from the checkpoint's" in err


def test_a_cut_tail_below_the_checkpoint_is_found(checkpointed, raw_sql):
    entries = list(JournalEntry.objects.filter(chain="demo").order_by("seq"))
    kept = entries[10]
    raw_sql("DELETE FROM {table} WHERE chain = 'demo' AND seq > %s", [kept.seq])
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE audit_chainhead SET last_id = %s, last_seq = %s, last_hash = %s "
            "WHERE chain = 'demo'",
            [kept.id, kept.seq, kept.hash],
        )

    code, _, err = _verify("--checkpoint", str(checkpointed))

    assert code == 1
    assert f"broken: entry {entries[-1].id} missing, though a checkpoint names it" in err
