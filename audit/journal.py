"""The one journal writer, record(), and the chain check, check_chain().

Each entry's hash is an HMAC-SHA256, under a key from GATEWAY_JOURNAL_KEYS (the environment,
never the database), of the previous hash followed by the entry's canonical form. Entries are
chained per contour (the chain is the contour's slug; "" holds entries of no contour and every
entry from the time the journal was one global chain), so writers of different contours never
wait on one lock. On PostgreSQL a contour has up to GATEWAY_JOURNAL_LANES parallel chains
("lanes", audit/lanes.py); a writer takes a lane no other transaction holds, so calls of one
contour do not queue either. Whoever can write the database can still cut a chain's
tail and move its head back; a checkpoint exported earlier and kept elsewhere
(audit.checkpoints) catches that.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction

from audit import lanes
from audit.models import Channel, JournalEntry, Phase, Status
from audit.redaction import personal_values, redact, scrub_text

LEGACY_CHAIN = ""  # the global chain of form-1 entries, continued by entries of no contour
VERIFY_CHUNK = 2000

_CHANNELS = frozenset(Channel.values)
_PHASES = frozenset(Phase.values)
_STATUSES = frozenset(Status.values)


@dataclass(frozen=True)
class ChainReport:
    """What verify found: how many entries it checked and the first broken id, if any, and why."""

    checked: int
    broken_id: int | None
    reason: str = ""


@dataclass(frozen=True)
class Anchor:
    """An entry exported earlier that the journal must still contain with that very hash.

    A checkpoint names its place (chain and seq), so a rewritten tail at that place is caught
    even when the entry now there has another id; an anchor given by id alone (an older
    checkpoint, or --after-id) pins the entry with that id.
    """

    last_id: int
    last_hash: str
    chain: str = LEGACY_CHAIN
    seq: int | None = None


def _clean_text(text: str) -> str:
    # PostgreSQL refuses NUL in text and lone surrogates in UTF-8; the journal must not fail.
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    if text.isascii():  # no surrogate to check for (most of an entry's texts)
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def _json_value(value: Any) -> Any:
    """Plain JSON data: what the JSONField stores and reads back on every backend."""
    if isinstance(value, str):
        return _clean_text(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    # dict and the sequences before the (slower) abstract Mapping check
    if isinstance(value, list | tuple | set | frozenset):
        return [_json_value(v) for v in value]
    if isinstance(value, dict | Mapping):
        return {_clean_text(str(k)): _json_value(v) for k, v in value.items()}
    try:
        encoded = DjangoJSONEncoder().default(value)
    except TypeError:
        encoded = str(value)
    return _json_value(encoded)


def hash_form(value: Any) -> Any:
    # PostgreSQL jsonb reads 1e16 back as the integer 10000000000000000, so an integral float
    # is hashed as the integer it equals; that keeps the hash stable across backends.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: hash_form(v) for k, v in value.items()}
    if isinstance(value, list):
        return [hash_form(v) for v in value]
    return value


def _now() -> datetime:
    return datetime.now(UTC)


def _utc_iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def canonical(entry: JournalEntry) -> str:
    """The entry's content fields as canonical JSON, reproducible from a stored row.

    Form 1 (one global chain) hashes the id; form 2 hashes the chain and the place in it
    instead, because the id now comes from the table's sequence when the row is inserted.
    """
    content: dict[str, Any] = {
        "id": entry.id,
        "at": _utc_iso(entry.at),
        "contour": entry.contour,
        "channel": entry.channel,
        "actor": entry.actor,
        "tool": entry.tool,
        "phase": entry.phase,
        "arguments": hash_form(entry.arguments),
        "status": entry.status,
        "code": entry.code,
        "message": entry.message,
        "confirmation_id": entry.confirmation_id,
        "operation_key": entry.operation_key,
        "upstream_request_id": entry.upstream_request_id,
        "upstream_status": entry.upstream_status,
        "duration_ms": entry.duration_ms,
    }
    if entry.spool_id:  # only spooled entries have it: every other hash stays as it was
        content["spool"] = {
            "id": entry.spool_id,
            "at": _utc_iso(entry.spooled_at) if entry.spooled_at else None,
            "duplicate_of": entry.duplicate_of,
        }
    if entry.form >= 2:
        del content["id"]
        content.update(chain=entry.chain, seq=entry.seq)
    return json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False)


def journal_keys() -> dict[str, str]:
    """Key id -> secret, from settings; the first one signs new entries."""
    keys: dict[str, str] = settings.GATEWAY_JOURNAL_KEYS
    if not keys:
        raise ImproperlyConfigured("GATEWAY_JOURNAL_KEYS is empty: the journal cannot sign")
    return keys


def signing_key_id() -> str:
    return next(iter(journal_keys()))


def entry_hash(prev_hash: str, entry: JournalEntry, secret: str) -> str:
    """HMAC-SHA256 under `secret` of the previous hash followed by the entry's canonical form."""
    message = (prev_hash + canonical(entry)).encode("utf-8")
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def legacy_hash(prev_hash: str, entry: JournalEntry) -> str:
    """The unkeyed sha256 link of entries written before the chain had keys."""
    return hashlib.sha256((prev_hash + canonical(entry)).encode("utf-8")).hexdigest()


def link_problem(entry: JournalEntry, keys: Mapping[str, str], legacy_last_id: int) -> str:
    """Why the entry's hash does not follow from its content and key; empty when it does."""
    if not entry.key_id:
        if entry.id > legacy_last_id:
            return (
                "has no key id (an unkeyed sha256 entry, accepted only up to "
                f"GATEWAY_JOURNAL_LEGACY_LAST_ID={legacy_last_id})"
            )
        expected = legacy_hash(entry.prev_hash, entry)
    elif entry.key_id not in keys:
        return (
            f"is signed with key id {entry.key_id!r}, which is not in GATEWAY_JOURNAL_KEYS "
            "(keep retired keys listed for verification)"
        )
    else:
        expected = entry_hash(entry.prev_hash, entry, keys[entry.key_id])
    if not hmac.compare_digest(expected, entry.hash):
        how = f"key {entry.key_id!r}" if entry.key_id else "legacy sha256"
        return f"hash does not match its content ({how})"
    return ""


# Each text field's max_length, looked up once (seven fields of every entry are fitted).
_LIMITS: dict[str, int | None] = {
    field.name: field.max_length for field in JournalEntry._meta.concrete_fields
}


def _fit(field: str, value: str) -> str:
    limit = _LIMITS[field]  # text fields only
    value = _clean_text(value)
    return value[:limit] if limit else value


def record(*, savepoint: bool = True, **content: Any) -> JournalEntry:
    """Append one entry: build() it from `content` (build's keyword arguments), then append().

    Runs in its own transaction, or a savepoint when nested, so the head lock is held until
    the outermost transaction ends: writers of one contour append one after another, writers
    of different contours side by side. A caller whose transaction fails as a whole when the
    entry fails passes savepoint=False: two round trips fewer.
    """
    return append(build(**content), savepoint=savepoint)


def build(
    *,
    contour: str,
    channel: str,
    actor: str,
    tool: str,
    phase: str,
    arguments: Mapping[str, Any] | None,
    status: str,
    code: str,
    message: str,
    confirmation_id: str = "",
    operation_key: str = "",
    upstream_request_id: str = "",
    upstream_status: int | None = None,
    duration_ms: int = 0,
    secrets: Iterable[str] = (),
    read_back: Any = None,
) -> JournalEntry:
    """The entry's content, checked and redacted, not yet placed in a chain (no database)."""
    if channel not in _CHANNELS:
        raise ValueError(f"unknown journal channel {channel!r}")
    if phase not in _PHASES:
        raise ValueError(f"unknown journal phase {phase!r}")
    if status not in _STATUSES:
        raise ValueError(f"unknown journal status {status!r}")
    secrets = tuple(secrets)
    plain_arguments = _json_value(dict(arguments or {}))
    safe_arguments = redact(plain_arguments, secrets)
    # Personal values are masked in the free text whatever their source: the arguments, and
    # what the call read back from elsewhere (an order's customer in a summary).
    personal = personal_values([plain_arguments, _json_value(read_back)])
    entry = JournalEntry(
        contour=_fit("contour", contour),
        channel=channel,
        actor=_fit("actor", scrub_text(actor, secrets, personal)),
        tool=_fit("tool", scrub_text(tool, secrets, personal)),
        phase=phase,
        arguments=safe_arguments,
        status=status,
        code=_fit("code", code),
        message=_clean_text(scrub_text(message, secrets, personal)),
        confirmation_id=_fit("confirmation_id", confirmation_id),
        operation_key=_fit("operation_key", scrub_text(operation_key, secrets, personal)),
        upstream_request_id=_fit("upstream_request_id", upstream_request_id),
        upstream_status=upstream_status,
        duration_ms=max(0, int(duration_ms)),
    )
    return entry


def append(entry: JournalEntry, *, savepoint: bool = True) -> JournalEntry:
    """Place a built entry at the end of a chain of its contour and save it.

    PostgreSQL, once the contour's lanes exist: one round trip after a head this process left,
    else two (the lane, then the entry with its head and the commit; lanes.py). Anywhere else,
    and to open a lane: through the ORM.
    """
    key_id = signing_key_id()
    secret = journal_keys()[key_id]

    def place(entry: JournalEntry, chain: str, last_seq: int, last_hash: str) -> None:
        _place(entry, chain, last_seq, last_hash, key_id, secret)

    usable = lanes.usable()
    if usable and lanes.append(entry, place, savepoint=savepoint):
        return entry
    with transaction.atomic(savepoint=savepoint):
        head = lanes.free_lane(entry.contour) or lanes.locked_head(entry.contour)
        _place(entry, head.chain, head.last_seq, head.last_hash, key_id, secret)
        entry.save()
        head.last_seq, head.last_id, head.last_hash = entry.seq, entry.id, entry.hash
        head.save(update_fields=["last_seq", "last_id", "last_hash"])
    if usable and not connection.in_atomic_block:  # committed: the next append can go after it
        lanes.FREE_HEADS.give(entry.contour, entry.chain, entry.seq, entry.hash)
    return entry


def _place(
    entry: JournalEntry, chain: str, last_seq: int, last_hash: str, key_id: str, secret: str
) -> None:
    """Next in the chain whose locked head says (last_seq, last_hash); hashed and signed.
    The id comes from the table's sequence when the row is inserted (it is not hashed)."""
    entry.chain, entry.seq, entry.at = chain, last_seq + 1, _now()
    entry.prev_hash, entry.key_id = last_hash, key_id
    entry.hash = entry_hash(entry.prev_hash, entry, secret)
