"""The journal's spool: an entry that cannot reach the database waits in a local file.

Decision: a call answered while the database is away is still journaled. Its entry,
already redacted (journal.build), is written to GATEWAY_STATE_DIR/journal-spool as one JSON
file (fsynced, renamed into place), and the answer names it (`journal_pending`). When the
database is back, drain() appends the spooled entries to their chains, oldest first, each
marked `arguments._spooled = {"id", "at"}` (the spool id and when the call was answered), so
the entry is found by the id the answer gave and is never appended twice. A write whose
connection died after the server committed it (the answer never came back) is spooled too,
with the hash it was written under: on drain, the spooled entry is still appended (the answer
named it) and says `duplicate_of` the committed one, so the journal tells the two apart. Drains run in the
process that spooled (after its next journaled call) and in the beat task
audit.tasks.drain_journal_spool (a worker sharing the state directory).

Only the database's own failures (DatabaseError) are spooled: any other failure of the
journal is a bug, and stays one.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction

from audit import journal
from audit.models import JournalEntry

logger = logging.getLogger(__name__)

MARK = "_spooled"
ATTEMPTED = "attempted_hash"  # in the spool file only, beside the entry's fields
# A drain appends at most this many entries per run: a call that triggers it stays quick.
DRAIN_BATCH = 200
_FIELDS = ("contour", "channel", "actor", "tool", "phase", "arguments", "status", "code",
           "message", "confirmation_id", "operation_key", "upstream_request_id",
           "upstream_status", "duration_ms")

# Whether this process may have spooled entries waiting: true at start (a spool left by a
# killed predecessor), true after a spool, false after a drain that emptied the directory.
_maybe_pending = True


@dataclass(frozen=True)
class Recorded:
    """An entry in the journal, or the id of one waiting in the spool."""

    entry: JournalEntry | None = None
    spool_id: str = ""

    @property
    def id(self) -> int | None:
        return self.entry.id if self.entry is not None else None


def directory() -> Path:
    return Path(settings.GATEWAY_STATE_DIR) / "journal-spool"


def record_or_spool(**fields: Any) -> Recorded:
    """journal.record(), or the spool when the database fails; drains after a success."""
    savepoint = fields.pop("savepoint", True)
    built = journal.build(**fields)
    try:
        entry = journal.append(built, savepoint=savepoint)
    except DatabaseError:
        if transaction.get_connection().in_atomic_block:
            raise  # a caller's transaction: its own failure decides, not the spool
        # The connection can die after the server committed the row, before saying so: the
        # attempt's hash (unique, set once the entry was placed) tells the drain whether it
        # is in the journal after all.
        spool_id = write(built, attempted_hash=built.hash or "")
        logger.warning("database unavailable: journal entry spooled as %s", spool_id)
        return Recorded(spool_id=spool_id)
    if _maybe_pending:
        try:
            drain()
        except Exception:  # a drain never fails the call that triggered it
            logger.exception("journal spool drain failed; the next call or the beat retries")
    return Recorded(entry=entry)


def write(entry: JournalEntry, attempted_hash: str = "") -> str:
    """Spool one built entry durably; returns its spool id. `attempted_hash`: the hash of a
    write whose outcome is unknown (the row may be in the journal)."""
    global _maybe_pending
    spool_id = uuid.uuid4().hex
    content: dict[str, Any] = {name: getattr(entry, name) for name in _FIELDS}
    content[ATTEMPTED] = attempted_hash
    content["arguments"] = {**(entry.arguments or {}),
                            MARK: {"id": spool_id, "at": datetime.now(UTC).isoformat()}}
    folder = directory()
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{time.time_ns():020d}-{spool_id}.json"
    temporary = folder / f".{name}.tmp"
    with temporary.open("w", encoding="utf-8") as handle:
        json.dump(content, handle, ensure_ascii=False)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, folder / name)
    _fsync_directory(folder)
    _maybe_pending = True
    return spool_id


def drain(limit: int = DRAIN_BATCH) -> int:
    """Append spooled entries to the journal, oldest first; returns how many were appended.

    One drainer at a time per directory (an advisory file lock; a busy lock means another
    process is draining). Each file is removed once its entry is committed; an entry already
    in the journal (a drain killed between commit and removal) is not appended again.
    """
    global _maybe_pending
    folder = directory()
    if not folder.is_dir():
        _maybe_pending = False
        return 0
    appended = 0
    with _drain_lock(folder) as locked:
        if not locked:
            return 0
        files = sorted(folder.glob("*.json"))
        for path in files[:limit]:
            content = json.loads(path.read_text(encoding="utf-8"))
            attempted = content.pop(ATTEMPTED, "")
            spool_id = content["arguments"][MARK]["id"]
            with transaction.atomic():
                if not JournalEntry.objects.filter(**{f"arguments__{MARK}__id": spool_id}
                                                   ).exists():
                    committed = (JournalEntry.objects.filter(hash=attempted)
                                 .values_list("id", flat=True).first() if attempted else None)
                    if committed is not None:  # the first write did land: say so, keep both
                        content["arguments"][MARK]["duplicate_of"] = committed
                    journal.append(JournalEntry(**content))
                    appended += 1
            path.unlink()
        _maybe_pending = len(files) > limit
    return appended


def pending() -> int:
    folder = directory()
    return len(list(folder.glob("*.json"))) if folder.is_dir() else 0


@contextmanager
def _drain_lock(folder: Path) -> Iterator[bool]:
    with (folder / ".drain.lock").open("a") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _fsync_directory(folder: Path) -> None:
    handle = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
