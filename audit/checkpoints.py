"""Journal checkpoints: the head's (last_id, last_hash) exported to be kept off the database host.

A checkpoint proves nothing by itself; `verify_journal --checkpoint FILE` later proves the
journal still extends it (audit.journal.check_chain). One JSON object per file:
{"last_id": 50, "last_hash": "<64 hex>", "key_id": "k1", "at": "<ISO 8601 UTC>"}.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from audit.journal import HEAD_PK, Anchor
from audit.models import JournalEntry, JournalHead

HASH_RE = re.compile(r"[0-9a-f]{64}")


class CheckpointError(ValueError):
    """A checkpoint that cannot be taken or read; the message says which and why."""


@dataclass(frozen=True)
class Checkpoint:
    last_id: int
    last_hash: str
    key_id: str
    at: str

    def anchor(self) -> Anchor:
        return Anchor(last_id=self.last_id, last_hash=self.last_hash)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)


def current() -> Checkpoint | None:
    """The journal's head as a checkpoint; None for an empty journal (nothing to anchor).

    The head's entry must be present with the head's hash: a checkpoint of a journal whose
    head already disagrees with its rows would anchor nothing.
    """
    head = JournalHead.objects.filter(pk=HEAD_PK).first()
    last = (JournalEntry.objects.filter(id=head.last_id) if head is not None and head.last_id
            else JournalEntry.objects.order_by("-id"))
    entry = last.only("id", "hash", "key_id").first()
    if entry is None:
        if head is not None and head.last_id:
            raise CheckpointError(f"the journal head names entry {head.last_id}, which is "
                                  "missing: run verify_journal")
        return None
    if head is not None and head.last_id and entry.hash != head.last_hash:
        raise CheckpointError(f"the journal head's hash differs from entry {entry.id}'s: "
                              "run verify_journal")
    return Checkpoint(last_id=entry.id, last_hash=entry.hash, key_id=entry.key_id,
                      at=datetime.now(UTC).isoformat(timespec="seconds"))


def write_new(checkpoint: Checkpoint, directory: Path) -> Path:
    """Write the checkpoint to a new file in `directory`; never replaces an existing file."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = checkpoint.at.replace(":", "").replace("+0000", "Z")
    stem = f"journal-checkpoint-{stamp}-{checkpoint.last_id}"
    for attempt in range(100):
        path = directory / (f"{stem}.json" if attempt == 0 else f"{stem}-{attempt}.json")
        try:
            with path.open("x", encoding="utf-8") as handle:
                handle.write(checkpoint.to_json() + "\n")
        except FileExistsError:
            continue
        return path
    raise CheckpointError(f"{directory}: no free file name for {stem}")


def parse(data: Any, where: str) -> Checkpoint:
    """A checkpoint from decoded JSON, refusing anything but the exported shape."""
    if not isinstance(data, dict):
        raise CheckpointError(f"{where}: expected a JSON object with last_id and last_hash")
    last_id, last_hash = data.get("last_id"), data.get("last_hash")
    if isinstance(last_id, bool) or not isinstance(last_id, int) or last_id < 1:
        raise CheckpointError(f"{where}: last_id must be a positive integer, got {last_id!r}")
    if not isinstance(last_hash, str) or not HASH_RE.fullmatch(last_hash):
        raise CheckpointError(f"{where}: last_hash must be 64 lowercase hex digits, "
                              f"got {last_hash!r}")
    key_id, at = data.get("key_id", ""), data.get("at", "")
    return Checkpoint(last_id=last_id, last_hash=last_hash, key_id=str(key_id), at=str(at))


def load(path: Path) -> list[Checkpoint]:
    """The checkpoints in a file: one JSON object, or one per line (files concatenated)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: cannot read the checkpoint ({exc})") from None
    try:
        return [parse(json.loads(text), str(path))]
    except json.JSONDecodeError:
        pass
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CheckpointError(f"{path}, line {number}: not JSON ({exc.msg})") from None
        found.append(parse(data, f"{path}, line {number}"))
    if not found:
        raise CheckpointError(f"{path}: no checkpoint in the file")
    return found
