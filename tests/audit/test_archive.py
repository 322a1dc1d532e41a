"""archive_journal: a closed month goes to a signed archive that verifies, then leaves the table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from audit import journal, seals
from audit.models import JournalEntry, SignedCheckpoint

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
VERIFIER = ROOT / "tools" / "verify_export.py"
JUNE = datetime(2025, 6, 1, tzinfo=UTC)


@pytest.fixture
def two_months(write, monkeypatch, settings, tmp_path):
    """May: demo and shop, sealed by the beat mid-month, and a contour `old` written only in
    May; June: demo and shop again. A checkpoint is kept mid-May and one at the end."""
    settings.TIME_ZONE = "UTC"

    def at(day: int, month: int) -> None:
        moment = datetime(2025, month, day, 12, 0, tzinfo=UTC)
        monkeypatch.setattr(journal, "_now", lambda: moment)

    at(3, 5)
    for n in range(3):
        write(contour="demo", arguments={"n": n})
        write(contour="shop", tool="create_order", phase="execute")
    write(contour="old")
    seals.seal()
    call_command("journal_checkpoint", "--output", str(tmp_path / "may.json"), stdout=StringIO())
    at(20, 5)
    for n in range(2):
        write(contour="demo", arguments={"n": 10 + n})
        write(contour="old")
    at(2, 6)
    for n in range(2):
        write(contour="demo", arguments={"n": 20 + n})
        write(contour="shop", tool="create_order", phase="execute")
    call_command("journal_checkpoint", "--output", str(tmp_path / "end.json"), stdout=StringIO())


def verify_journal_output(*args: str) -> str:
    out = StringIO()
    call_command("verify_journal", *args, stdout=out)
    return out.getvalue()


def verify_offline(tmp_path: Path, export: Path) -> subprocess.CompletedProcess[str]:
    out = StringIO()
    call_command("journal_public_key", stdout=out)
    key = tmp_path / "key.pem"
    key.write_text(out.getvalue())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "PYTHONPATH"))}
    return subprocess.run(
        [sys.executable, str(VERIFIER), "--public-key", str(key), str(export)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _archive(*args: str) -> str:
    out = StringIO()
    call_command("archive_journal", "--before", "2025-06", *args, stdout=out)
    return out.getvalue()


def _may() -> dict[str, int]:
    rows = JournalEntry.objects.filter(at__lt=JUNE).values_list("contour", flat=True)
    return {contour: list(rows).count(contour) for contour in set(rows)}


def _check_archived_month(tmp_path: Path, write: Callable[..., JournalEntry]) -> None:
    assert _may() == {"demo": 5, "shop": 3, "old": 3}
    archive = tmp_path / "2025-05.jsonl"

    said = _archive("--output", str(archive))

    # May leaves whole, `old` too: written only in May, its head keeps the archived end.
    assert "archived and removed 11 entries of 3 chain(s)" in said
    assert _may() == {}
    done = verify_offline(tmp_path, archive)
    assert done.returncode == 0, done.stderr
    assert "ok: 11 rows" in done.stdout
    assert verify_journal_output().startswith("ok: 4 entries")
    for kept in ("may.json", "end.json"):
        assert verify_journal_output("--checkpoint", str(tmp_path / kept)).startswith("ok:")
    assert verify_journal_output("--full", "--checkpoint", str(tmp_path / "may.json")).startswith(
        "ok:"
    )
    # The signed export leaves the archived stretches out and still verifies.
    out = StringIO()
    call_command("export_journal", "--format", "jsonl", "--signed", stdout=out)
    later = tmp_path / "later.jsonl"
    later.write_text(out.getvalue(), encoding="utf-8")
    done = verify_offline(tmp_path, later)
    assert done.returncode == 0, done.stderr
    assert "ok: 4 rows" in done.stdout
    # Nothing more is due: a second run archives nothing.
    assert "nothing to archive" in _archive("--output", str(tmp_path / "again.jsonl"))
    # A chain whose rows all left goes on from its archived end, and still checks.
    after = tmp_path / "after.json"
    call_command("journal_checkpoint", "--output", str(after), stdout=StringIO())
    assert '"chain": "old"' in after.read_text()
    assert JournalEntry.objects.filter(chain="old").count() == 0
    write(contour="old")
    assert JournalEntry.objects.get(chain="old").seq == 4
    assert verify_journal_output().startswith("ok: 5 entries")
    assert verify_journal_output("--checkpoint", str(after)).startswith("ok:")


def test_a_closed_month_archives_verifies_offline_and_leaves(two_months, tmp_path, write):
    _check_archived_month(tmp_path, write)


@pytest.mark.postgres
def test_a_closed_month_archives_on_postgresql(two_months, tmp_path, write):
    _check_archived_month(tmp_path, write)


def test_a_tampered_archive_is_refused_before_anything_is_removed(two_months, tmp_path):
    archive = tmp_path / "2025-05.jsonl"
    said = _archive("--output", str(archive), "--keep-rows")
    assert "archive verified: 11 entries" in said and _may() == {"demo": 5, "shop": 3, "old": 3}
    lines = archive.read_text(encoding="utf-8").splitlines(keepends=True)
    target = next(i for i, line in enumerate(lines) if "type" not in json.loads(line))
    row = json.loads(lines[target])
    row["actor"] = "someone_else"
    lines[target] = json.dumps(row, ensure_ascii=False) + "\n"
    archive.write_text("".join(lines), encoding="utf-8")

    with pytest.raises(CommandError, match="does not verify, nothing was removed"):
        _archive("--from-archive", str(archive))

    assert _may() == {"demo": 5, "shop": 3, "old": 3}
    assert not SignedCheckpoint.objects.filter(archived_at__isnull=False).exists()
    # The untouched copy of the same archive is accepted.
    fresh = tmp_path / "fresh.jsonl"
    _archive("--output", str(fresh), "--keep-rows")
    assert "archived and removed 11 entries" in _archive("--from-archive", str(fresh))
    assert _may() == {}


def test_an_archive_of_other_stretches_is_refused(two_months, tmp_path):
    partial = tmp_path / "partial.jsonl"
    _archive("--output", str(partial), "--keep-rows")
    lines = partial.read_text(encoding="utf-8").splitlines(keepends=True)
    # Drop the whole first stretch and re-sign nothing: the manifest no longer matches.
    first_end = next(
        i for i, line in enumerate(lines[1:], 1) if json.loads(line).get("type") == "checkpoint"
    )
    partial.write_text("".join(lines[first_end:]), encoding="utf-8")

    with pytest.raises(CommandError, match="nothing was removed"):
        _archive("--from-archive", str(partial))
    assert _may() == {"demo": 5, "shop": 3, "old": 3}


def test_a_row_removed_after_the_boundary_still_breaks_the_chain(two_months, tmp_path, raw_sql):
    _archive("--output", str(tmp_path / "2025-05.jsonl"))
    first = JournalEntry.objects.filter(contour="demo").order_by("seq").first()
    assert first is not None
    raw_sql("DELETE FROM {table} WHERE id = %s", [first.id])

    with pytest.raises(SystemExit):
        verify_journal_output()


def test_an_open_month_is_refused(two_months, tmp_path):
    with pytest.raises(CommandError, match="only closed months"):
        call_command(
            "archive_journal",
            "--before",
            "2999-01",
            "--output",
            str(tmp_path / "x.jsonl"),
            stdout=StringIO(),
        )
    assert not (tmp_path / "x.jsonl").exists()


def test_a_kept_checkpoint_at_the_archived_end_must_carry_its_hash(two_months, tmp_path):
    _archive("--output", str(tmp_path / "2025-05.jsonl"))
    end = SignedCheckpoint.objects.filter(chain="demo", archived_at__isnull=False).latest("to_seq")
    kept = {
        "chain": "demo",
        "seq": end.to_seq,
        "last_id": end.last_id,
        "key_id": "",
        "at": "2025-05-31T00:00:00+00:00",
    }
    (tmp_path / "good.json").write_text(json.dumps({**kept, "last_hash": end.last_hash}))
    (tmp_path / "forged.json").write_text(json.dumps({**kept, "last_hash": "ab" * 32}))

    assert verify_journal_output("--checkpoint", str(tmp_path / "good.json")).startswith("ok:")
    with pytest.raises(SystemExit):
        verify_journal_output("--checkpoint", str(tmp_path / "forged.json"))
