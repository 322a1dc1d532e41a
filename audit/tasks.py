"""Celery tasks of the journal: the periodic checkpoint (beat, CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

import logging
from pathlib import Path

from celery import shared_task
from django.conf import settings

from audit import checkpoints, spool

logger = logging.getLogger(__name__)


@shared_task(name="audit.tasks.write_journal_checkpoint")
def write_journal_checkpoint() -> str:
    """Write the journal head as a new checkpoint file; returns its path ("" when empty).

    Idempotent enough to rerun: a second run adds another file, never replaces one.
    """
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
        logger.error("journal spool low: %s MiB free (minimum %s), writable=%s",
                     room.free_bytes // (1024 * 1024) if room.free_bytes is not None else "?",
                     settings.GATEWAY_SPOOL_MIN_FREE_MB, room.writable)
    return spool.drain()
