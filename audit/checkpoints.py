"""Journal checkpoints: each chain's head exported to be kept off the database host.

A checkpoint proves nothing by itself; `verify_journal --checkpoint FILE` later proves the
journal still extends it (audit.walk.check_chain). One JSON object per chain, one per line:
{"chain": "shop", "seq": 12, "last_id": 50, "last_hash": "<64 hex>", "key_id": "k1",
"at": "<ISO 8601 UTC>"}. Files from before per-contour chains have no chain and seq: they pin
the entry by id, which verifies the same way.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from audit.journal import LEGACY_CHAIN, Anchor
from audit.models import ChainHead, JournalEntry
from audit.places import beyond_head_problem, beyond_heads
from audit.walk import archived_ends

HASH_RE = re.compile(r"[0-9a-f]{64}")


class CheckpointError(ValueError):
    """A checkpoint that cannot be taken or read; the message says which and why."""


@dataclass(frozen=True)
class Checkpoint:
    last_id: int
    last_hash: str
    key_id: str
    at: str
    chain: str = LEGACY_CHAIN
    seq: int | None = None

    def anchor(self) -> Anchor:
        return Anchor(
            last_id=self.last_id, last_hash=self.last_hash, chain=self.chain, seq=self.seq
        )

    def to_json(self) -> str:
        data = asdict(self)
        if self.seq is None:
            del data["chain"], data["seq"]
        return json.dumps(data, ensure_ascii=False, sort_keys=True)


def current() -> list[Checkpoint]:
    """Every chain's head as a checkpoint, chain by chain; empty for an empty journal.

    The head's entry must be present with the head's hash, and no row may stand past a
    head: a checkpoint of a journal that already disagrees with its rows would anchor nothing.
    """
    stray = beyond_heads()
    if stray:
        beyond, head_seq = stray[0]
        raise CheckpointError(
            f"entry {beyond.id} {beyond_head_problem(beyond, head_seq)}: run verify_journal"
        )
    at = datetime.now(UTC).isoformat(timespec="seconds")
    heads = {head.chain: head for head in ChainHead.objects.all()}
    archived = archived_ends()
    found: list[Checkpoint] = []
    chains = sorted(
        set(heads) | set(JournalEntry.objects.order_by().values_list("chain", flat=True).distinct())
    )
    for chain in chains:
        head = heads.get(chain)
        last = (
            JournalEntry.objects.filter(chain=chain, seq=head.last_seq)
            if head is not None and head.last_seq
            else JournalEntry.objects.filter(chain=chain).order_by("-seq")
        )
        entry = last.only("id", "seq", "chain", "hash", "key_id").first()
        end = archived.get(chain)
        if entry is None and head is not None and end is not None and end.seq == head.last_seq:
            # Every row of the chain is archived (audit/archive.py): the head still says
            # where it ends, and the signed checkpoint at the cut must agree with it.
            if end.last_hash != head.last_hash:
                raise CheckpointError(
                    f"the journal head of chain {chain!r} differs from its archived end: "
                    "run verify_journal"
                )
            found.append(
                Checkpoint(
                    last_id=end.last_id,
                    last_hash=end.last_hash,
                    key_id="",
                    at=at,
                    chain=chain,
                    seq=end.seq,
                )
            )
            continue
        if entry is None:
            if head is not None and head.last_seq:
                raise CheckpointError(
                    f"the journal head names entry {head.last_id}, which is "
                    "missing: run verify_journal"
                )
            continue
        if head is not None and head.last_seq and entry.hash != head.last_hash:
            raise CheckpointError(
                f"the journal head's hash differs from entry {entry.id}'s: run verify_journal"
            )
        found.append(
            Checkpoint(
                last_id=entry.id,
                last_hash=entry.hash,
                key_id=entry.key_id,
                at=at,
                chain=entry.chain,
                seq=entry.seq,
            )
        )
    return found


def as_lines(found: list[Checkpoint]) -> str:
    return "".join(checkpoint.to_json() + "\n" for checkpoint in found)


def write_new(found: list[Checkpoint], directory: Path) -> Path:
    """Write the checkpoints to a new file in `directory`; never replaces an existing file."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = found[0].at.replace(":", "").replace("+0000", "Z")
    stem = f"journal-checkpoint-{stamp}-{max(c.last_id for c in found)}"
    for attempt in range(100):
        path = directory / (f"{stem}.json" if attempt == 0 else f"{stem}-{attempt}.json")
        try:
            with path.open("x", encoding="utf-8") as handle:
                handle.write(as_lines(found))
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
        raise CheckpointError(
            f"{where}: last_hash must be 64 lowercase hex digits, got {last_hash!r}"
        )
    key_id, at = data.get("key_id", ""), data.get("at", "")
    chain, seq = data.get("chain", LEGACY_CHAIN), data.get("seq")
    if not isinstance(chain, str):
        raise CheckpointError(f"{where}: chain must be a string, got {chain!r}")
    if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int) or seq < 1):
        raise CheckpointError(f"{where}: seq must be a positive integer, got {seq!r}")
    return Checkpoint(
        last_id=last_id, last_hash=last_hash, key_id=str(key_id), at=str(at), chain=chain, seq=seq
    )


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
