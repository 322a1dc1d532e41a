"""Celery tasks of the journal: checkpoints, the spool, month partitions (CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path

import httpx
from celery import shared_task
from django.conf import settings
from django.core.mail import EmailMessage

from audit import checkpoints, partitions, seals, spool
from audit.models import SignedCheckpoint

logger = logging.getLogger(__name__)


@shared_task(name="audit.tasks.write_journal_checkpoint")
def write_journal_checkpoint() -> str:
    """Seal what is new with the signing key (sent to the auditors), then write the journal
    head as a new checkpoint file; returns its path ("" when empty).

    Idempotent enough to rerun: a second run adds another file, never replaces one, and seals
    only what the first did not.
    """
    send_sealed(seals.seal())
    found = checkpoints.current()
    if not found:
        logger.info("journal checkpoint skipped: the journal is empty")
        return ""
    path = checkpoints.write_new(found, Path(settings.GATEWAY_JOURNAL_CHECKPOINT_DIR))
    logger.info("journal checkpoint: %s chain head(s) written to %s", len(found), path)
    return str(path)


@shared_task(name="audit.tasks.drain_journal_spool")
def drain_journal_spool() -> int:
    """Append entries spooled while the database was away (audit/spool.py); returns how many.

    Also the spool's alarm: below GATEWAY_SPOOL_MIN_FREE_MB free (or unwritable) it logs an
    error every run, which Sentry and the log's alerting carry (docs/production.md), before
    the disk is full and an outage's calls are refused with journal_unavailable."""
    room = spool.room()
    if room.low:
        logger.error(
            "journal spool low: %s MiB free (minimum %s), writable=%s",
            room.free_bytes // (1024 * 1024) if room.free_bytes is not None else "?",
            settings.GATEWAY_SPOOL_MIN_FREE_MB,
            room.writable,
        )
    return spool.drain()


@shared_task(name="audit.tasks.make_journal_partitions")
def make_journal_partitions() -> list[str]:
    """PostgreSQL: the journal's partitions of this month and the next ones, made ahead of the
    rows (audit/partitions.py); the names made. Nothing where the journal is flat (SQLite)."""
    made = partitions.make_ahead(datetime.now(UTC))
    if made:
        logger.info("journal partitions made: %s", ", ".join(made))
    return made


def send_sealed(made: list[SignedCheckpoint]) -> None:
    """Send new signed checkpoints where the operator cannot rewrite them: the auditors' mail
    (GATEWAY_JOURNAL_CHECKPOINT_EMAILS) and a webhook (GATEWAY_JOURNAL_CHECKPOINT_WEBHOOK),
    as JSON Lines. A failed delivery is logged; the seal itself stays in the database."""
    if not made:
        return
    body = "".join(json.dumps(seals.as_record(c), ensure_ascii=False) + "\n" for c in made)
    name = f"journal-seal-{made[0].at.strftime('%Y%m%dT%H%M%SZ')}.jsonl"
    if settings.GATEWAY_JOURNAL_CHECKPOINT_EMAILS:
        mail = EmailMessage(
            subject=f"Журнал шлюза: {len(made)} подписанных контрольных точек",
            body="Сохраните вложение у себя: им проверяется выгрузка журнала "
            "(tools/verify_export.py --checkpoints).",
            to=settings.GATEWAY_JOURNAL_CHECKPOINT_EMAILS,
        )
        mail.attach(name, body, "application/jsonl")
        try:
            mail.send()
        except OSError:
            logger.exception("journal seal: e-mail to the auditors failed")
    url = settings.GATEWAY_JOURNAL_CHECKPOINT_WEBHOOK
    if url:
        try:
            httpx.post(
                url,
                content=body.encode(),
                timeout=10,
                headers={"Content-Type": "application/jsonl"},
            ).raise_for_status()
        except httpx.HTTPError:
            logger.exception("journal seal: the checkpoint webhook failed")
