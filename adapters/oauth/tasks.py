"""The OAuth server's periodic work (config/settings/tasks.py: CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task

from . import registration


@shared_task
def expire_unused_clients() -> int:
    return registration.expire_unused_clients()
