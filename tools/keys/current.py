"""The API key the current request (or task) authenticated with (tools.keys.scope.key_of reads it)."""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tools.models import ApiKey

AUTHENTICATED_KEY: ContextVar[ApiKey | None] = ContextVar("authenticated_key", default=None)
