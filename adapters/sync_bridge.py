"""Sync ORM code run from an ASGI event loop (MCP, OAuth, /health): one rule for every adapter."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import close_old_connections

P = ParamSpec("P")
R = TypeVar("R")


def _fresh_connections(fn: Callable[P, R]) -> Callable[P, R]:
    """What Django's request signals do around a view: drop stale or expired DB connections."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        finally:
            close_old_connections()

    return wrapper


async def run_sync(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run sync ORM code from the event loop, on a worker thread of its own.

    thread_sensitive=False: calls of one worker run side by side, so one slow upstream answer
    never holds up the others (Django views get the same through a thread per request). Each
    call opens and closes its own connection; the guarantees rest on row locks and unique
    constraints, and SQLite writers queue on its lock (IMMEDIATE mode, see settings).
    """
    return await sync_to_async(_fresh_connections(fn), thread_sensitive=False)(*args, **kwargs)
