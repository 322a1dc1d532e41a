"""The journal's spool: an entry that cannot reach the database waits in a local file.

Decision: a call answered while the database is away is still journaled. Its entry,
already redacted (journal.build), is written to GATEWAY_STATE_DIR/journal-spool as one JSON
file (fsynced, renamed into place), and the answer names it (`journal_pending`). When the
database is back, drain() appends the spooled entries to their chains, oldest first. The
spool's own marks live beside the entry in the file and in the entry's own columns
(`spool_id`, `spooled_at`, `duplicate_of`), never in `arguments`, which the caller writes: a
caller-planted `_spooled` or `duplicate_of` is caller data and decides nothing. The spool id
(unique in the journal) is how the entry is found by the id the answer gave and why it is
never appended twice. A write whose connection died after the server committed it (the answer
never came back) is spooled too, with the hash it was written under: on drain, the spooled
entry is still appended (the answer named it) and says `duplicate_of` the committed one, so
the journal tells the two apart. Drains run in the process that spooled (after its next
journaled call) and in the beat task audit.tasks.drain_journal_spool (a worker sharing the
state directory).

When the spool cannot be written either (a full or unwritable disk), record_or_spool() says so
(Recorded.lost) instead of raising: the answer then says `journal_unavailable`
(tools/pipeline/call_trace.py). Only the database's own failures (DatabaseError) are spooled: any other
failure of the journal is a bug, and stays one.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction

from audit import journal
from audit.models import JournalEntry

logger = logging.getLogger(__name__)

LEGACY_MARK = "_spooled"  # where files spooled before the marks had columns kept them
FORMAT = 2  # {"format": 2, "entry": {...}, "spool": {"id", "at"}, "attempted_hash"}
ATTEMPTED = "attempted_hash"  # in the spool file only, beside the entry
# A drain appends at most this many entries per run: a call that triggers it stays quick.
DRAIN_BATCH = 200
_FIELDS = (
    "contour",
    "channel",
    "actor",
    "tool",
    "phase",
    "arguments",
    "status",
    "code",
    "message",
    "confirmation_id",
    "operation_key",
    "upstream_request_id",
    "upstream_status",
    "duration_ms",
)

# Whether this process may have spooled entries waiting: true at start (a spool left by a
# killed predecessor), true after a spool, false after a drain that emptied the directory.
_maybe_pending = True


@dataclass(frozen=True)
class Recorded:
    """An entry in the journal, or the id of one waiting in the spool."""

    entry: JournalEntry | None = None
    spool_id: str = ""
    lost: bool = False  # neither the database nor the spool took it

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
        try:
            spool_id = write(built, attempted_hash=built.hash or "")
        except OSError as error:  # ENOSPC, EACCES, EROFS: said in the answer, never raised
            logger.error(
                "journal entry kept nowhere: database unavailable and the spool refused it (%s)",
                error.strerror or type(error).__name__,
            )
            return Recorded(lost=True)
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
    content: dict[str, Any] = {
        "format": FORMAT,
        "entry": {name: getattr(entry, name) for name in _FIELDS},
        "spool": {"id": spool_id, "at": datetime.now(UTC).isoformat()},
        ATTEMPTED: attempted_hash,
    }
    folder = directory()
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{time.time_ns():020d}-{spool_id}.json"
    temporary = folder / f".{name}.tmp"
    try:
        with temporary.open("w", encoding="utf-8") as handle:
            json.dump(content, handle, ensure_ascii=False)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, folder / name)
    except OSError:
        temporary.unlink(missing_ok=True)  # a half-written file must not fill the disk more
        raise
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
            try:
                spooled = _read(path)
            except (OSError, ValueError, KeyError, TypeError) as error:
                # Left in place for a person to look at; it never blocks the entries after it.
                logger.error(
                    "journal spool file %s unreadable (%s); skipped",
                    path.name,
                    type(error).__name__,
                )
                continue
            with transaction.atomic():
                lock_spool_id(spooled.entry.spool_id)
                if not _drained(spooled):
                    committed = (
                        JournalEntry.objects.filter(hash=spooled.attempted)
                        .values_list("id", flat=True)
                        .first()
                        if spooled.attempted
                        else None
                    )
                    # The first write did land: say so, keep both.
                    spooled.entry.duplicate_of = committed
                    journal.append(spooled.entry)
                    appended += 1
            try:
                path.unlink()
            except OSError:  # drained; the unique spool id keeps the next drain from repeating
                logger.warning("journal spool file %s drained but not removed", path.name)
        _maybe_pending = len(files) > limit
    return appended


@dataclass(frozen=True)
class _Spooled:
    entry: JournalEntry
    attempted: str
    legacy: bool


def _read(path: Path) -> _Spooled:
    content = json.loads(path.read_text(encoding="utf-8"))
    if content.get("format") == FORMAT:
        fields, mark = content["entry"], content["spool"]
        legacy = False
    else:  # written before the marks had columns: the writer's mark is in the arguments
        fields = {name: content[name] for name in _FIELDS}
        fields["arguments"] = dict(fields["arguments"])
        mark = fields["arguments"].pop(LEGACY_MARK)
        legacy = True
    entry = JournalEntry(
        **{name: fields[name] for name in _FIELDS},
        spool_id=str(mark["id"]),
        spooled_at=datetime.fromisoformat(mark["at"]),
    )
    return _Spooled(entry=entry, attempted=str(content.get(ATTEMPTED) or ""), legacy=legacy)


# The advisory lock space of spool ids (pg_advisory_xact_lock(class, key)): "SPOL".
SPOOL_LOCK_CLASS = 0x53504F4C


def lock_spool_id(spool_id: str) -> None:
    """PostgreSQL: one drainer of a spool id at a time, until its transaction ends. The journal
    partitioned by month cannot keep spool_id unique (audit/partitions.py): with this lock the
    check that follows sees any drain of the same id that committed first."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [SPOOL_LOCK_CLASS, spool_id]
            )


def _drained(spooled: _Spooled) -> bool:
    """Whether the entry is in the journal already (a drain killed before removing its file)."""
    spool_id = spooled.entry.spool_id
    if JournalEntry.objects.filter(spool_id=spool_id).exists():
        return True
    # A file of the old format may have been drained by the old code, mark in the arguments.
    return (
        spooled.legacy
        and JournalEntry.objects.filter(**{f"arguments__{LEGACY_MARK}__id": spool_id}).exists()
    )


def pending() -> int:
    folder = directory()
    try:
        return len(list(folder.glob("*.json"))) if folder.is_dir() else 0
    except OSError:
        return 0


@dataclass(frozen=True)
class Room:
    """What the spool's disk can still take: free bytes, and whether the directory is writable."""

    free_bytes: int | None
    writable: bool

    @property
    def low(self) -> bool:
        floor = int(settings.GATEWAY_SPOOL_MIN_FREE_MB) * 1024 * 1024
        return not self.writable or self.free_bytes is None or self.free_bytes < floor


def room() -> Room:
    """The spool directory's disk (its nearest existing parent before the first spool)."""
    place = directory()
    while not place.exists() and place != place.parent:
        place = place.parent
    try:
        free = shutil.disk_usage(place).free
    except OSError:
        return Room(free_bytes=None, writable=False)
    return Room(free_bytes=free, writable=place.is_dir() and os.access(place, os.W_OK | os.X_OK))


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
