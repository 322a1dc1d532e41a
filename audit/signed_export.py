"""The signed export: whole sealed stretches of chains, each after its signed checkpoint.

JSON Lines. For each signed checkpoint that the selection touches (a contour's chains, a
period), in chain and place order: the checkpoint record ({"type": "checkpoint", ...,
"signature"}) and then every row of its stretch, each with `digest`, the running SHA-256
chain (audit/seals.py) up to and including it, so a verifier names the first row that does
not match. Last, a manifest signed at export time: the number of rows and a hash over the
checkpoints carried, so cutting whole stretches off the end is caught too.

A stretch is exported whole even where it reaches past the period asked for: a row can only be
verified with all the rows its checkpoint seals.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime

from django.db.models import Q, QuerySet

from audit import seals
from audit.models import ZERO_HASH, SignedCheckpoint
from audit.places import LANE_MARK


def checkpoints(
    since: datetime | None, until: datetime | None, contour: str | None
) -> QuerySet[SignedCheckpoint]:
    # An archived stretch's rows are gone (audit/archive.py): its archive file carries them.
    qs = SignedCheckpoint.objects.filter(archived_at__isnull=True)
    if contour is not None:
        qs = qs.filter(
            Q(chain=contour) | Q(chain__startswith=f"{contour}{LANE_MARK}")
            if contour
            else Q(chain="")
        )
    if since is not None:
        qs = qs.filter(last_at__gte=since)
    if until is not None:
        qs = qs.filter(first_at__lt=until)
    return qs.order_by("chain", "from_seq")


def iter_signed_jsonl(qs: QuerySet[SignedCheckpoint]) -> Iterator[str]:
    rows = 0
    carried = hashlib.sha256()
    for checkpoint in qs.iterator(chunk_size=200):
        record = seals.as_record(checkpoint)
        carried.update(record["signature"].encode())
        yield json.dumps(record, ensure_ascii=False) + "\n"
        digest = ZERO_HASH
        for row in seals.stretch_rows(checkpoint.chain, checkpoint.from_seq, checkpoint.to_seq):
            digest = seals.step(digest, row)
            rows += 1
            yield json.dumps({**row, "digest": digest}, ensure_ascii=False) + "\n"
    manifest = seals.sign(
        {
            "v": 1,
            "type": "manifest",
            "rows": rows,
            "checkpoints": carried.hexdigest(),
            "at": seals.iso(datetime.now(UTC)),
        }
    )
    yield json.dumps(manifest, ensure_ascii=False) + "\n"
