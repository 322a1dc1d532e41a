"""Who did it, as the journal's `actor` column names them: built here and nowhere else.

The gateway's own callers are "key:<prefix>" (tools/keys/scope.py); people are "user:<login>";
manage.py commands are "cli:<os user>"; Celery is "celery"; an OAuth client acting on its
grant (issuing, refreshing, revoking its tokens) is "oauth:<client id> <client name>".
"""

from __future__ import annotations

import getpass
from typing import Any

USER_ACTOR = "user:"
CELERY_ACTOR = "celery"
OAUTH_ACTOR = "oauth:"


def user_actor(user: Any) -> str:
    """A person acting through the admin or the operator's pages."""
    return f"{USER_ACTOR}{user.get_username()}"


def cli_actor() -> str:
    """Who ran the command, as the operating system knows them (no login exists here)."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # a uid without a passwd entry, e.g. in a container
        return "cli:unknown"


def oauth_actor(client_id: str, client_name: str) -> str:
    """A registered OAuth client (adapters/oauth): the start of its id, then its own name."""
    return f"{OAUTH_ACTOR}{client_id[:8]} {client_name}"[:150]
