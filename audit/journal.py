"""The one journal writer, record(), and the chain check, check_chain().

Each entry's hash is an HMAC-SHA256, under a key from GATEWAY_JOURNAL_KEYS (the environment,
never the database), of the previous hash followed by the entry's canonical form. Whoever can
write the database can still cut the tail and move the head back; a checkpoint exported
earlier and kept elsewhere (audit.checkpoints) catches that.
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
from django.db import transaction

from audit.models import ZERO_HASH, Channel, JournalEntry, JournalHead, Phase, Status
from audit.redaction import personal_values, redact, scrub_text

HEAD_PK = 1
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
    """A (last_id, last_hash) pair exported earlier: the journal must still contain it."""

    last_id: int
    last_hash: str


def _clean_text(text: str) -> str:
    # PostgreSQL refuses NUL in text and lone surrogates in UTF-8; the journal must not fail.
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
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
    if isinstance(value, Mapping):
        return {_clean_text(str(k)): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_json_value(v) for v in value]
    try:
        encoded = DjangoJSONEncoder().default(value)
    except TypeError:
        encoded = str(value)
    return _json_value(encoded)


def _hash_form(value: Any) -> Any:
    # PostgreSQL jsonb reads 1e16 back as the integer 10000000000000000, so an integral float
    # is hashed as the integer it equals; that keeps the hash stable across backends.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _hash_form(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_hash_form(v) for v in value]
    return value


def _now() -> datetime:
    return datetime.now(UTC)


def _utc_iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def canonical(entry: JournalEntry) -> str:
    """The entry's content fields as canonical JSON, reproducible from a stored row."""
    content = {
        "id": entry.id,
        "at": _utc_iso(entry.at),
        "contour": entry.contour,
        "channel": entry.channel,
        "actor": entry.actor,
        "tool": entry.tool,
        "phase": entry.phase,
        "arguments": _hash_form(entry.arguments),
        "status": entry.status,
        "code": entry.code,
        "message": entry.message,
        "confirmation_id": entry.confirmation_id,
        "operation_key": entry.operation_key,
        "upstream_request_id": entry.upstream_request_id,
        "upstream_status": entry.upstream_status,
        "duration_ms": entry.duration_ms,
    }
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


def _link_problem(entry: JournalEntry, keys: Mapping[str, str], legacy_last_id: int) -> str:
    """Why the entry's hash does not follow from its content and key; empty when it does."""
    if not entry.key_id:
        if entry.id > legacy_last_id:
            return ("has no key id (an unkeyed sha256 entry, accepted only up to "
                    f"GATEWAY_JOURNAL_LEGACY_LAST_ID={legacy_last_id})")
        expected = legacy_hash(entry.prev_hash, entry)
    elif entry.key_id not in keys:
        return (f"is signed with key id {entry.key_id!r}, which is not in GATEWAY_JOURNAL_KEYS "
                "(keep retired keys listed for verification)")
    else:
        expected = entry_hash(entry.prev_hash, entry, keys[entry.key_id])
    if not hmac.compare_digest(expected, entry.hash):
        how = f"key {entry.key_id!r}" if entry.key_id else "legacy sha256"
        return f"hash does not match its content ({how})"
    return ""


def _fit(field: str, value: str) -> str:
    limit = JournalEntry._meta.get_field(field).max_length
    value = _clean_text(value)
    return value[:limit] if limit else value


def _locked_head() -> JournalHead:
    head = JournalHead.objects.select_for_update().filter(pk=HEAD_PK).first()
    if head is not None:
        return head
    # No head yet (fresh or flushed table): start it from the last entry, if any. A concurrent
    # first writer makes get_or_create fall back to reading (and locking) the winner's row.
    last = JournalEntry.objects.order_by("-id").values("id", "hash").first()
    defaults = {"last_id": last["id"], "last_hash": last["hash"]} if last else {}
    head, _ = JournalHead.objects.select_for_update().get_or_create(pk=HEAD_PK, defaults=defaults)
    return head


def record(
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
) -> JournalEntry:
    """Append one entry: redact, lock the head, chain the hash, save, advance the head.

    Runs in its own atomic block (a savepoint when nested), so the head lock is held until the
    outermost transaction ends and concurrent writers append one after another.
    """
    if channel not in _CHANNELS:
        raise ValueError(f"unknown journal channel {channel!r}")
    if phase not in _PHASES:
        raise ValueError(f"unknown journal phase {phase!r}")
    if status not in _STATUSES:
        raise ValueError(f"unknown journal status {status!r}")
    secrets = tuple(secrets)
    plain_arguments = _json_value(dict(arguments or {}))
    safe_arguments = redact(plain_arguments, secrets)
    personal = personal_values(plain_arguments)
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
    key_id = signing_key_id()
    secret = journal_keys()[key_id]
    with transaction.atomic():
        head = _locked_head()
        # The id comes from the locked head, not the sequence, because it is part of the hash.
        entry.id = head.last_id + 1
        entry.at = _now()
        entry.prev_hash = head.last_hash
        entry.key_id = key_id
        entry.hash = entry_hash(entry.prev_hash, entry, secret)
        entry.save()
        head.last_id = entry.id
        head.last_hash = entry.hash
        head.save(update_fields=["last_id", "last_hash"])
    return entry


def check_chain(anchors: Iterable[Anchor] = ()) -> ChainReport:
    """Walk the journal in id order and report the first entry whose link does not hold.

    An entry is broken when its hash is not the HMAC of its content under the key it names (or
    names no configured key), its prev_hash is not the previous entry's hash, or its id does
    not follow the previous one (ids are handed out without gaps, so a gap means a deleted
    row). Entries appended after the head is read are left for the next run; a head pointing
    past the last entry means the tail was cut, and the first missing id is reported.

    Each anchor must still be in the journal: its entry present, with that very hash, at or
    below the head. A cut tail with a rewritten head (and entries appended again after it)
    verifies on its own, but not against a checkpoint taken before the cut.
    """
    keys = journal_keys()
    legacy_last_id: int = settings.GATEWAY_JOURNAL_LEGACY_LAST_ID
    pinned = {anchor.last_id: anchor.last_hash for anchor in anchors}
    head = JournalHead.objects.filter(pk=HEAD_PK).first()
    entries = JournalEntry.objects.order_by("id")
    if head is not None:
        entries = entries.filter(id__lte=head.last_id)
    expected_prev = ZERO_HASH
    expected_id: int | None = None
    checked = 0
    for entry in entries.iterator(chunk_size=VERIFY_CHUNK):
        if expected_id is not None and entry.id != expected_id:
            reason = f"follows entry {expected_id - 1}: entries in between are missing"
        elif entry.prev_hash != expected_prev:
            reason = "prev_hash is not the previous entry's hash"
        else:
            reason = _link_problem(entry, keys, legacy_last_id)
        if not reason and entry.id in pinned and pinned[entry.id] != entry.hash:
            reason = (f"hash {entry.hash[:16]}… differs from the checkpoint's "
                      f"{pinned[entry.id][:16]}…: the journal was rewritten from here or earlier")
        if reason:
            return ChainReport(checked=checked, broken_id=entry.id, reason=reason)
        checked += 1
        expected_prev = entry.hash
        expected_id = entry.id + 1
    last_seen = (expected_id or 1) - 1
    if head is not None and head.last_id > 0:
        if last_seen < head.last_id:
            return ChainReport(checked=checked, broken_id=last_seen + 1,
                               reason=f"missing: the head names entry {head.last_id}")
        if expected_prev != head.last_hash:
            return ChainReport(checked=checked - 1, broken_id=last_seen,
                               reason="the head's hash differs from this entry's")
    beyond = sorted(last_id for last_id in pinned if last_id > last_seen)
    if beyond:
        return ChainReport(checked=checked, broken_id=beyond[0],
                           reason=f"missing, though a checkpoint names it: the journal ends "
                                  f"at entry {last_seen} (its tail was cut)")
    return ChainReport(checked=checked, broken_id=None)


def verify_chain(anchors: Iterable[Anchor] = ()) -> int | None:
    """Return the id of the first broken entry, or None when the whole chain holds."""
    return check_chain(anchors).broken_id
