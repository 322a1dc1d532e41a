"""The beat's MCP housekeeping: expired sessions deleted in small batches."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from adapters.mcp import sessions


@shared_task(name="adapters.mcp.tasks.expire_sessions")
def expire_sessions() -> int:
    """Delete idle and never-used sessions past their expiry; returns how many."""
    return sessions.expire(settings.MCP_SESSION_EXPIRE_BATCH)
