"""The keyed chain and its anchors: what a database writer can no longer rewrite unnoticed.

The attacker here has the database (raw SQL past every model guard) and this code, but not
GATEWAY_JOURNAL_KEYS, nor the checkpoints an auditor keeps elsewhere.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings

from audit.journal import canonical
from audit.models import ChainHead, JournalEntry
from audit.tasks import write_journal_checkpoint
from config.celery import app as celery_app

pytestmark = pytest.mark.django_db

KID1 = {"kid1": "1" * 40}
KID2_THEN_1 = {"kid2": "2" * 40, **KID1}
KID2_ONLY = {"kid2": "2" * 40}


def verify(*args: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("verify_journal", *args, stdout=out, stderr=err)
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def sql(template: str, params: list[Any]) -> None:
    tables = {"entries": JournalEntry._meta.db_table, "head": ChainHead._meta.db_table}
    with connection.cursor() as cursor:
        cursor.execute(
            template.format(**{k: connection.ops.quote_name(v) for k, v in tables.items()}), params
        )


def rechain_with_sha256(from_id: int, *, key_id: str | None = None) -> None:
    """What an attacker with the code but no key does: recompute every later link, move the head."""
    first = JournalEntry.objects.get(pk=from_id)
    prev = (
        JournalEntry.objects.filter(chain=first.chain, seq=first.seq - 1)
        .values_list("hash", flat=True)
        .first()
        or "0" * 64
    )
    for entry in JournalEntry.objects.filter(chain=first.chain, seq__gte=first.seq).order_by("seq"):
        if key_id is not None:
            entry.key_id = key_id
        new_hash = hashlib.sha256((prev + canonical(entry)).encode()).hexdigest()
        sql(
            "UPDATE {entries} SET prev_hash = %s, hash = %s, key_id = %s WHERE id = %s",
            [prev, new_hash, entry.key_id, entry.id],
        )
        prev = new_hash
    last_id, seq = JournalEntry.objects.order_by("-id").values_list("id", "seq").first()
    sql(
        "UPDATE {head} SET last_id = %s, last_seq = %s, last_hash = %s WHERE chain = 'demo'",
        [last_id, seq, prev],
    )


def take_checkpoint(path: Path) -> dict[str, Any]:
    call_command("journal_checkpoint", "--output", str(path), stdout=StringIO())
    return json.loads(path.read_text())


@pytest.mark.parametrize("key_id", [None, ""], ids=["key-id-kept", "key-id-blanked"])
def test_editing_an_entry_and_rehashing_the_rest_with_sha256_is_named(write, key_id):
    entries = [write(arguments={"n": n}) for n in range(8)]
    victim = entries[4]
    sql("UPDATE {entries} SET message = %s WHERE id = %s", ["всё в порядке", victim.id])

    rechain_with_sha256(victim.id, key_id=key_id)

    code, out, err = verify()
    assert code == 1
    assert out == ""
    assert f"broken: entry {victim.id} " in err
    assert f"({len(entries[:4])} entries before it are intact)" in err


@pytest.mark.parametrize("appended", [0, 3], ids=["tail-cut", "tail-cut-and-rewritten"])
def test_cutting_the_tail_and_moving_the_head_fails_against_a_checkpoint(write, tmp_path, appended):
    entries = [write(arguments={"n": n}) for n in range(6)]
    checkpoint = take_checkpoint(tmp_path / "cp.json")
    assert checkpoint["last_id"] == entries[-1].id
    kept = entries[2]
    sql("DELETE FROM {entries} WHERE id > %s", [kept.id])
    sql(
        "UPDATE {head} SET last_id = %s, last_seq = %s, last_hash = %s WHERE chain = 'demo'",
        [kept.id, kept.seq, kept.hash],
    )
    for n in range(appended):
        write(arguments={"rewritten": n})  # the gateway itself signs the new tail

    alone = verify()
    anchored = verify("--checkpoint", str(tmp_path / "cp.json"))
    inline = verify("--after-id", str(checkpoint["last_id"]), "--hash", checkpoint["last_hash"])

    assert alone[0] == 0  # without an anchor a cut is indistinguishable from a younger journal
    for code, out, err in (anchored, inline):
        assert code == 1
        assert out == ""
        if appended and err is anchored[2]:
            # The checkpoint names the place (chain, seq): the entry now there is another one.
            assert "differs from the checkpoint" in err
            assert f"(its entry {entries[-1].id})" in err
        elif appended:  # --after-id pins the id, which the rewritten tail did not reuse
            assert f"broken: entry {entries[-1].id} missing, though a checkpoint names it" in err
        else:
            assert f"broken: entry {entries[-1].id} missing, though a checkpoint names it" in err
            assert f"the journal ends at entry {kept.id}" in err


def test_an_untouched_journal_extends_its_checkpoints(write, tmp_path):
    for n in range(3):
        write(arguments={"n": n})
    first = take_checkpoint(tmp_path / "first.json")
    for n in range(2):
        write(arguments={"later": n})
    second = take_checkpoint(tmp_path / "second.json")
    write()

    code, out, err = verify(
        "--checkpoint", str(tmp_path / "first.json"), "--checkpoint", str(tmp_path / "second.json")
    )
    inline = verify("--after-id", str(first["last_id"]), "--hash", first["last_hash"])

    full = verify(
        "--full",
        "--checkpoint",
        str(tmp_path / "first.json"),
        "--checkpoint",
        str(tmp_path / "second.json"),
    )

    assert (code, err) == (0, "")
    # Only what follows the latest checkpoint is walked; --full walks every entry.
    assert out.strip() == (
        f"ok: 1 entries after the checkpoints; extends 2 checkpoint(s), "
        f"the latest at entry {second['last_id']}"
    )
    assert full[1].strip() == (
        f"ok: 6 entries; extends 2 checkpoint(s), the latest at entry {second['last_id']}"
    )
    assert inline[0] == 0


def test_a_checkpoint_names_the_head_its_key_and_time(write, tmp_path):
    write()
    last = write()

    out = StringIO()
    call_command("journal_checkpoint", stdout=out)

    data = json.loads(out.getvalue())
    assert set(data) == {"chain", "seq", "last_id", "last_hash", "key_id", "at"}
    assert (data["chain"], data["seq"], data["last_id"], data["last_hash"], data["key_id"]) == (
        "demo",
        last.seq,
        last.id,
        last.hash,
        "dev",
    )
    assert data["at"].endswith("+00:00")


def test_journal_checkpoint_never_overwrites_a_file(write, tmp_path):
    write()
    path = tmp_path / "cp.json"
    path.write_text("older checkpoint\n")

    with pytest.raises(CommandError, match="never overwritten"):
        call_command("journal_checkpoint", "--output", str(path), stdout=StringIO())

    assert path.read_text() == "older checkpoint\n"


def test_entries_under_two_keys_verify_after_a_rotation(write):
    with override_settings(GATEWAY_JOURNAL_KEYS=KID1):
        old = [write(), write()]
    with override_settings(GATEWAY_JOURNAL_KEYS=KID2_THEN_1):
        new = [write(), write()]
        code, out, _ = verify()

    assert [e.key_id for e in old + new] == ["kid1", "kid1", "kid2", "kid2"]
    assert (code, out.strip()) == (0, "ok: 4 entries")


def test_a_retired_key_dropped_from_the_settings_is_named(write):
    with override_settings(GATEWAY_JOURNAL_KEYS=KID1):
        first = write()
    with override_settings(GATEWAY_JOURNAL_KEYS=KID2_ONLY):
        write()
        code, _, err = verify()

    assert code == 1
    assert (
        f"broken: entry {first.id} is signed with key id 'kid1', which is not in "
        "GATEWAY_JOURNAL_KEYS" in err
    )


def test_the_same_entry_under_another_secret_fails(write):
    with override_settings(GATEWAY_JOURNAL_KEYS=KID1):
        first = write()
    with override_settings(GATEWAY_JOURNAL_KEYS={"kid1": "x" * 40}):
        code, _, err = verify()

    assert code == 1
    assert f"broken: entry {first.id} hash does not match its content (key 'kid1')" in err


def test_an_entry_without_a_key_id_is_a_clear_failure(write, raw_sql):
    entries = [write() for _ in range(3)]

    raw_sql("UPDATE {table} SET key_id = %s WHERE id = %s", ["", entries[1].id])

    code, _, err = verify()
    assert code == 1
    assert f"broken: entry {entries[1].id} has no key id" in err
    assert "GATEWAY_JOURNAL_LEGACY_LAST_ID=0" in err


def test_legacy_entries_verify_only_up_to_the_declared_id(write):
    legacy = [write(arguments={"n": n}) for n in range(3)]
    rechain_with_sha256(legacy[0].id, key_id="")  # the journal as the previous release wrote it
    after = write()  # the first keyed entry, chained to the last legacy hash

    with override_settings(GATEWAY_JOURNAL_LEGACY_LAST_ID=legacy[-1].id):
        declared = verify()
    undeclared = verify()

    assert after.key_id == "dev"
    assert after.prev_hash == JournalEntry.objects.get(pk=legacy[-1].id).hash
    assert declared[0] == 0
    assert undeclared[0] == 1
    assert f"broken: entry {legacy[0].id} has no key id" in undeclared[2]


def test_rewriting_legacy_entries_breaks_at_the_first_keyed_one(write):
    legacy = [write(arguments={"n": n}) for n in range(3)]
    rechain_with_sha256(legacy[0].id, key_id="")
    after = write()
    sql("UPDATE {entries} SET message = %s WHERE id = %s", ["подменено", legacy[1].id])

    rechain_with_sha256(legacy[1].id)  # every link recomputed, the keyed one included

    with override_settings(GATEWAY_JOURNAL_LEGACY_LAST_ID=legacy[-1].id):
        code, _, err = verify()
    assert code == 1
    assert f"broken: entry {after.id} hash does not match its content (key 'dev')" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json at all", "line 1: not JSON"),
        ('{"last_id": 0, "last_hash": "' + "a" * 64 + '"}', "last_id must be a positive integer"),
        ('{"last_id": "5", "last_hash": "' + "a" * 64 + '"}', "last_id must be a positive integer"),
        ('{"last_id": 5, "last_hash": "xyz"}', "last_hash must be 64 lowercase hex digits"),
        ("[1, 2]", "expected a JSON object"),
        ("", "no checkpoint in the file"),
    ],
)
def test_a_malformed_checkpoint_is_refused_by_name(write, tmp_path, content, message):
    write()
    path = tmp_path / "cp.json"
    path.write_text(content)

    with pytest.raises(CommandError, match=message):
        verify("--checkpoint", str(path))


def test_after_id_needs_its_hash(write):
    write()

    with pytest.raises(CommandError, match="--after-id and --hash go together"):
        verify("--after-id", "1")


def test_the_beat_task_appends_checkpoint_files(write, settings, tmp_path):
    settings.GATEWAY_JOURNAL_CHECKPOINT_DIR = str(tmp_path / "checkpoints")
    write()
    first_path = Path(write_journal_checkpoint.delay().get())
    first_text = first_path.read_text()
    last = write()

    second_path = Path(write_journal_checkpoint.delay().get())

    files = sorted((tmp_path / "checkpoints").iterdir())
    assert files == sorted([first_path, second_path])
    assert first_path.read_text() == first_text
    assert json.loads(second_path.read_text())["last_id"] == last.id
    code, out, _ = verify(*[arg for f in files for arg in ("--checkpoint", str(f))])
    assert code == 0
    assert "extends 2 checkpoint(s)" in out


def test_the_beat_task_on_an_empty_journal_writes_nothing(settings, tmp_path):
    settings.GATEWAY_JOURNAL_CHECKPOINT_DIR = str(tmp_path / "checkpoints")

    assert write_journal_checkpoint.delay().get() == ""
    assert not (tmp_path / "checkpoints").exists()


def test_the_checkpoint_task_is_on_the_beat_schedule(settings):
    celery_app.loader.import_default_modules()
    scheduled: Callable[..., Any] = celery_app.tasks[
        settings.CELERY_BEAT_SCHEDULE["journal-checkpoint"]["task"]
    ]

    assert scheduled.name == write_journal_checkpoint.name
    assert settings.CELERY_BEAT_SCHEDULE["journal-checkpoint"]["schedule"] > 0
