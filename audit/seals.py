"""Signed checkpoints: stretches of each chain sealed with an Ed25519 key, verifiable offline.

The HMAC chain (audit/journal.py) proves integrity only to whoever holds its secret. A seal
makes the same rows checkable with a public key alone: for each chain, the places after its
last seal up to its head are walked once (each link checked under the HMAC keys first, so a
tampered journal is never sealed), folded into a SHA-256 chain over every row's canonical
content and hashes (`digest`), and the stretch (chain, places, first and last hash, digest,
times) is signed. tools/verify_export.py recomputes the digest from an exported stretch and
checks the signature: an edited, removed or added row, or a cut tail, no longer matches.

The digest form is the contract with tools/verify_export.py (which imports nothing of ours):
step(d, row) = sha256_hex(d + row.prev_hash + row.hash + canonical_row(row)), from ZERO_HASH.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from audit import partitions
from audit.journal import VERIFY_CHUNK, hash_form, journal_keys, link_problem
from audit.models import ROW_FIELDS, ZERO_HASH, ChainHead, JournalEntry, SignedCheckpoint

SIGNED_FIELDS = (
    "v",
    "type",
    "chain",
    "from_seq",
    "to_seq",
    "prev_hash",
    "last_hash",
    "last_id",
    "digest",
    "first_at",
    "last_at",
    "at",
    "key",
    "rows",
    "checkpoints",
)


class SealError(RuntimeError):
    """The journal disagrees with itself where a seal would go: nothing is signed."""


@lru_cache(maxsize=4)
def _private_key(text: str) -> Ed25519PrivateKey:
    text = text.strip()
    try:
        if text.startswith("-----BEGIN"):
            key = serialization.load_pem_private_key(text.encode(), password=None)
        else:
            key = Ed25519PrivateKey.from_private_bytes(base64.b64decode(text, validate=True))
    except (ValueError, TypeError, binascii.Error):
        raise ImproperlyConfigured(
            "GATEWAY_JOURNAL_SIGNING_KEY is not an Ed25519 private key "
            "(PEM, or 32 raw bytes in base64)"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ImproperlyConfigured("GATEWAY_JOURNAL_SIGNING_KEY must be an Ed25519 key")
    return key


def signing_key() -> Ed25519PrivateKey:
    return _private_key(settings.GATEWAY_JOURNAL_SIGNING_KEY)


def raw_public(key: Ed25519PrivateKey | None = None) -> bytes:
    return (
        (key or signing_key())
        .public_key()
        .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )


def fingerprint(public_raw: bytes) -> str:
    """A key's short name: the first 16 hex digits of SHA-256 over its 32 raw bytes."""
    return hashlib.sha256(public_raw).hexdigest()[:16]


def public_pem(public_raw: bytes | None = None) -> str:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    key = Ed25519PublicKey.from_public_bytes(public_raw or raw_public())
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


def canonical_row(row: dict[str, Any]) -> str:
    """audit.journal.canonical() of an exported row (`at` already in UTC ISO form)."""
    content = {name: row[name] for name in ROW_FIELDS[:16]}
    content["arguments"] = hash_form(content["arguments"])
    if row["form"] >= 2:
        del content["id"]
        content.update(chain=row["chain"], seq=row["seq"])
    return json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False)


def step(digest: str, row: dict[str, Any]) -> str:
    message = digest + row["prev_hash"] + row["hash"] + canonical_row(row)
    return hashlib.sha256(message.encode("utf-8")).hexdigest()


def iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def stretch_rows(chain: str, from_seq: int, to_seq: int) -> Iterator[dict[str, Any]]:
    """The chain's rows at places from_seq..to_seq as exported (`at` in UTC ISO), in order."""
    rows = (
        JournalEntry.objects.filter(chain=chain, seq__gte=from_seq, seq__lte=to_seq)
        .order_by("seq")
        .values(*ROW_FIELDS)
        .iterator(chunk_size=VERIFY_CHUNK)
    )
    for row in rows:
        row["at"] = iso(row["at"])
        yield row


def payload(checkpoint: SignedCheckpoint) -> dict[str, Any]:
    return {
        "v": 1,
        "type": "checkpoint",
        "chain": checkpoint.chain,
        "from_seq": checkpoint.from_seq,
        "to_seq": checkpoint.to_seq,
        "prev_hash": checkpoint.prev_hash,
        "last_hash": checkpoint.last_hash,
        "last_id": checkpoint.last_id,
        "digest": checkpoint.digest,
        "first_at": iso(checkpoint.first_at),
        "last_at": iso(checkpoint.last_at),
        "at": iso(checkpoint.at),
        "key": checkpoint.key,
    }


def signed_bytes(data: dict[str, Any]) -> bytes:
    """What is signed: the SIGNED_FIELDS of a record as compact, key-sorted JSON."""
    return json.dumps(
        {name: data[name] for name in SIGNED_FIELDS if name in data},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()


def sign(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with the current key's name, its public key and the signature added."""
    key = signing_key()
    public = raw_public(key)
    data = {**data, "key": fingerprint(public)}
    return {
        **data,
        "public_key": base64.b64encode(public).decode(),
        "signature": base64.b64encode(key.sign(signed_bytes(data))).decode(),
    }


def as_record(checkpoint: SignedCheckpoint) -> dict[str, Any]:
    """The checkpoint as a JSON record: its signed fields, public key and signature."""
    return {
        **payload(checkpoint),
        "public_key": checkpoint.public_key,
        "signature": checkpoint.signature,
    }


def _seal_chain(
    head: ChainHead, keys: dict[str, str], legacy_last_id: int, upto: int | None = None
) -> SignedCheckpoint | None:
    """Seal the chain from its last seal up to its head (or up to place `upto`)."""
    end_seq = head.last_seq if upto is None else upto
    last = (
        SignedCheckpoint.objects.filter(chain=head.chain)
        .order_by("-to_seq")
        .values("to_seq", "last_hash")
        .first()
    )
    from_seq = last["to_seq"] + 1 if last else 1
    prev = last["last_hash"] if last else ZERO_HASH
    if end_seq < from_seq:
        return None
    digest, first_at, row, last_row = ZERO_HASH, None, None, None
    expected_seq, month_end = from_seq, None
    for row in stretch_rows(head.chain, from_seq, end_seq):
        at = datetime.fromisoformat(row["at"])
        if month_end is None:
            month_end = partitions.next_month(partitions.month_floor(at))
        elif at >= month_end:
            # A stretch stays inside one month, so an archived month leaves whole: its
            # partition is detached, not deleted row by row (audit/archive.py).
            end_seq = expected_seq - 1
            break
        last_row = row
        where = f"entry {row['id']} (chain {head.chain!r}, place {row['seq']})"
        if row["seq"] != expected_seq:
            raise SealError(f"{where}: place {expected_seq} is missing: run verify_journal")
        if row["prev_hash"] != prev:
            raise SealError(f"{where}: prev_hash is not the previous entry's hash")
        entry = JournalEntry(**{**row, "at": at})
        problem = link_problem(entry, keys, legacy_last_id)
        if problem:
            raise SealError(f"{where}: {problem}: run verify_journal")
        digest, prev, expected_seq = step(digest, row), row["hash"], expected_seq + 1
        first_at = first_at or row["at"]
    row = last_row
    reached_head = upto is None and end_seq == head.last_seq
    if row is None or expected_seq - 1 != end_seq or (reached_head and prev != head.last_hash):
        raise SealError(
            f"chain {head.chain!r}: place {end_seq} is not where its rows end: run verify_journal"
        )
    data = sign(
        {
            "v": 1,
            "type": "checkpoint",
            "chain": head.chain,
            "from_seq": from_seq,
            "to_seq": end_seq,
            "prev_hash": last["last_hash"] if last else ZERO_HASH,
            "last_hash": prev,
            "last_id": row["id"],
            "digest": digest,
            "first_at": first_at,
            "last_at": row["at"],
            "at": iso(datetime.now(UTC)),
        }
    )
    return SignedCheckpoint.objects.create(
        **{
            name: data[name]
            for name in (
                "chain",
                "from_seq",
                "to_seq",
                "prev_hash",
                "last_hash",
                "last_id",
                "digest",
                "key",
                "public_key",
                "signature",
            )
        },
        first_at=datetime.fromisoformat(data["first_at"]),
        last_at=datetime.fromisoformat(data["last_at"]),
        at=datetime.fromisoformat(data["at"]),
    )


def seal() -> list[SignedCheckpoint]:
    """Seal every chain's entries written since its last seal, up to its head; the new seals.

    Costs what is new: each chain is read from its last seal on. A chain that does not verify
    there raises SealError and nothing more is sealed in this run. A stretch never spans the
    start of a month (in TIME_ZONE): rows of two months make two stretches.
    """
    keys, legacy_last_id = journal_keys(), settings.GATEWAY_JOURNAL_LEGACY_LAST_ID
    made = []
    for head in ChainHead.objects.filter(last_seq__gt=0).order_by("chain"):
        made += _seal_months(head, keys, legacy_last_id, head.last_seq)
    return made


def _seal_months(
    head: ChainHead, keys: dict[str, str], legacy_last_id: int, upto: int
) -> list[SignedCheckpoint]:
    """Seal the chain up to place `upto`, one stretch per month its rows fall in."""
    made: list[SignedCheckpoint] = []
    while True:
        with transaction.atomic():
            sealed = _seal_chain(
                head, keys, legacy_last_id, upto=None if upto == head.last_seq else upto
            )
        if sealed is None:
            return made
        made.append(sealed)
        if sealed.to_seq >= upto:
            return made


def seal_until(boundary: datetime) -> list[SignedCheckpoint]:
    """Seal each chain up to its last place written before `boundary` (not yet sealed), so
    that a month's entries end a stretch and can be archived whole (audit/archive.py)."""
    keys, legacy_last_id = journal_keys(), settings.GATEWAY_JOURNAL_LEGACY_LAST_ID
    made = []
    for head in ChainHead.objects.filter(last_seq__gt=0).order_by("chain"):
        last = (
            JournalEntry.objects.filter(chain=head.chain, seq__lte=head.last_seq, at__lt=boundary)
            .order_by("-seq")
            .values_list("seq", flat=True)
            .first()
        )
        if last is None:
            continue
        made += _seal_months(head, keys, legacy_last_id, last)
    return made
