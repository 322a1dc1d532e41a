#!/usr/bin/env python3
"""Verify a signed journal export offline, with the gateway's public key alone.

    python verify_export.py --public-key KEY.pem [--public-key OLD.pem] \
        [--checkpoints KEPT.jsonl] EXPORT.jsonl

EXPORT.jsonl is `manage.py export_journal --format jsonl --signed`: signed checkpoints, each
followed by every row of the stretch of its chain it seals, then a signed manifest. KEY.pem is
`manage.py journal_public_key` (give every key that signed, after a rotation). KEPT.jsonl are
signed checkpoints the auditor received (e-mail, webhook) and kept: the export must agree with
each of them that it overlaps.

Exit 0 when every row is covered by a checkpoint signed with a given key and matches it; exit 1
naming the first bad line otherwise (an edited, removed, added or reordered row, a cut tail);
exit 2 on a usage error. Self-contained on purpose: the standard library and `cryptography`,
nothing of the gateway, so an auditor can read it whole and run it anywhere.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as `python tools/verify_export.py`, its own folder would come first on the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]

import argparse  # noqa: E402
import base64  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
from typing import Any  # noqa: E402

from cryptography.exceptions import InvalidSignature  # noqa: E402
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey  # noqa: E402

ZERO_HASH = "0" * 64
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
CONTENT_FIELDS = (
    "id",
    "at",
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


class Bad(Exception):
    """The export does not verify; the message says where and why."""


def hash_form(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: hash_form(v) for k, v in value.items()}
    if isinstance(value, list):
        return [hash_form(v) for v in value]
    return value


def canonical(row: dict[str, Any]) -> str:
    """The entry's canonical JSON, exactly as the journal hashed and sealed it."""
    content = {name: row[name] for name in CONTENT_FIELDS}
    content["arguments"] = hash_form(content["arguments"])
    if row["form"] >= 2:
        del content["id"]
        content.update(chain=row["chain"], seq=row["seq"])
    return json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False)


def step(digest: str, row: dict[str, Any]) -> str:
    message = digest + row["prev_hash"] + row["hash"] + canonical(row)
    return hashlib.sha256(message.encode("utf-8")).hexdigest()


def fingerprint(key: Ed25519PublicKey) -> str:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def load_keys(paths: list[str]) -> dict[str, Ed25519PublicKey]:
    keys = {}
    for path in paths:
        key = serialization.load_pem_public_key(Path(path).read_bytes())
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError(f"{path}: not an Ed25519 public key")
        keys[fingerprint(key)] = key
    return keys


def check_signature(record: dict[str, Any], keys: dict[str, Ed25519PublicKey], where: str) -> None:
    key = keys.get(record.get("key", ""))
    if key is None:
        raise Bad(
            f"{where}: signed with key {record.get('key')!r}, not one of the public keys given"
        )
    message = json.dumps(
        {n: record[n] for n in SIGNED_FIELDS if n in record},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()
    try:
        key.verify(base64.b64decode(record.get("signature", "")), message)
    except (InvalidSignature, ValueError):
        raise Bad(
            f"{where}: the signature does not match (the record was changed or not "
            "signed by that key)"
        ) from None


def describe(row: dict[str, Any]) -> str:
    return f"row id {row.get('id')} (chain {row.get('chain')!r}, place {row.get('seq')})"


class Export:
    """One pass over the file: the open stretch, the rows so far, the checkpoints carried."""

    def __init__(
        self, keys: dict[str, Ed25519PublicKey], kept: dict[tuple[str, int], dict[str, Any]]
    ) -> None:
        self.keys, self.kept = keys, kept
        self.open: dict[str, Any] | None = None
        self.rows = 0
        self.carried = hashlib.sha256()
        self.spans: dict[str, tuple[int, int]] = {}  # chain -> first and last place carried
        self.signatures: set[str] = set()

    def checkpoint(self, record: dict[str, Any], where: str) -> None:
        self.close(where)
        check_signature(
            record,
            self.keys,
            f"{where}: checkpoint of chain {record.get('chain')!r} to place {record.get('to_seq')}",
        )
        self.carried.update(record["signature"].encode())
        self.signatures.add(record["signature"])
        first, last = self.spans.get(record["chain"], (record["from_seq"], record["to_seq"]))
        self.spans[record["chain"]] = (min(first, record["from_seq"]), max(last, record["to_seq"]))
        self.open = {
            **record,
            "sealed": record["digest"],
            "next": record["from_seq"],
            "prev": record["prev_hash"],
            "digest": ZERO_HASH,
            "where": where,
        }

    def row(self, row: dict[str, Any], where: str) -> None:
        stretch = self.open
        if stretch is None:
            raise Bad(
                f"{where}: {describe(row)} is covered by no signed checkpoint (added, or moved)"
            )
        if row.get("chain") != stretch["chain"] or row.get("seq", 0) < stretch["next"]:
            raise Bad(
                f"{where}: {describe(row)} does not belong here: the checkpoint on "
                f"{stretch['where']} expects place {stretch['next']} of chain "
                f"{stretch['chain']!r} (an added or duplicated row)"
            )
        if row["seq"] > stretch["next"]:
            raise Bad(
                f"{where}: the row at place {stretch['next']} of chain "
                f"{stretch['chain']!r} is missing before {describe(row)}"
            )
        if row["prev_hash"] != stretch["prev"]:
            raise Bad(f"{where}: {describe(row)}: prev_hash is not the previous row's hash")
        digest = step(stretch["digest"], row)
        if digest != row.get("digest"):
            raise Bad(
                f"{where}: {describe(row)} was changed: its content does not give the sealed digest"
            )
        stretch.update(next=row["seq"] + 1, prev=row["hash"], digest=digest)
        self.rows += 1
        if row["seq"] == stretch["to_seq"]:
            if digest != stretch["sealed"] or row["hash"] != stretch["last_hash"]:
                raise Bad(
                    f"{where}: {describe(row)} ends the stretch but does not match its "
                    f"checkpoint on {stretch['where']}"
                )
            self.open = None

    def close(self, where: str) -> None:
        stretch = self.open
        if stretch is not None:
            raise Bad(
                f"{where}: the row at place {stretch['next']} of chain "
                f"{stretch['chain']!r} is missing (the checkpoint on {stretch['where']} "
                f"seals places up to {stretch['to_seq']})"
            )

    def manifest(self, record: dict[str, Any], where: str) -> None:
        self.close(where)
        check_signature(record, self.keys, f"{where}: the manifest")
        if record.get("rows") != self.rows or record.get("checkpoints") != self.carried.hexdigest():
            raise Bad(
                f"{where}: the manifest names {record.get('rows')} rows and other "
                f"checkpoints than the {self.rows} rows above: rows or stretches were "
                "removed or added"
            )

    def agrees_with_kept(self) -> None:
        for (chain, to_seq), record in sorted(self.kept.items()):
            span = self.spans.get(chain)
            if span is None or not span[0] <= to_seq <= span[1]:
                continue
            if record["signature"] not in self.signatures:
                raise Bad(
                    f"the kept checkpoint of chain {chain!r} to place {to_seq} is not "
                    "in the export: that stretch of the journal was rewritten"
                )


def load_kept(
    paths: list[str], keys: dict[str, Ed25519PublicKey]
) -> dict[tuple[str, int], dict[str, Any]]:
    kept = {}
    for path in paths:
        for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                record = json.loads(line)
                check_signature(record, keys, f"{path}, line {number}")
                kept[(record["chain"], record["to_seq"])] = record
    return kept


def verify(
    path: str, keys: dict[str, Ed25519PublicKey], kept: dict[tuple[str, int], dict[str, Any]]
) -> int:
    export = Export(keys, kept)
    number, manifest_seen = 0, False
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            where = f"line {number}"
            if manifest_seen:
                raise Bad(f"{where}: a line after the manifest")
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise Bad(f"{where}: not JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise Bad(f"{where}: not a JSON object")
            kind = record.get("type")
            if kind == "checkpoint":
                export.checkpoint(record, where)
            elif kind == "manifest":
                export.manifest(record, where)
                manifest_seen = True
            else:
                try:
                    export.row(record, where)
                except (KeyError, TypeError) as exc:
                    raise Bad(f"{where}: {describe(record)} lacks a field ({exc})") from None
    if not manifest_seen:
        export.close(f"after line {number} (the end of the file)")
        raise Bad(
            f"the export ends after line {number} without its signed manifest: its tail was cut"
        )
    export.agrees_with_kept()
    return export.rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--public-key", action="append", required=True, metavar="KEY.pem")
    parser.add_argument(
        "--checkpoints",
        action="append",
        default=[],
        metavar="KEPT.jsonl",
        help="signed checkpoints kept apart (mail, webhook); repeatable",
    )
    parser.add_argument("export", metavar="EXPORT.jsonl")
    args = parser.parse_args(argv)
    try:
        keys = load_keys(args.public_key)
        kept = load_kept(args.checkpoints, keys)
        rows = verify(args.export, keys, kept)
    except Bad as exc:
        print(f"BAD: {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"ok: {rows} rows, every one covered by a signed checkpoint and intact")
    return 0


if __name__ == "__main__":
    sys.exit(main())
