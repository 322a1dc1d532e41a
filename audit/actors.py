"""Who did it, as the journal's `actor` column names them: built here and nowhere else.

The gateway's own callers are "key:<prefix>" (tools/keys/scope.py); people are "user:<login>";
manage.py commands are "cli:<os user>"; Celery is "celery"; an OAuth client acting on its
grant (issuing, refreshing, revoking its tokens) is "oauth:<client id> <client name>".
Setup no person did (tests' fixtures, benchmarks, the conformance kit's own contours) is
SCAFFOLDING. Every safety service takes its actor as a required keyword and refuses an empty
one (required()): the shortest call is never the one that skips the journal.
"""

from __future__ import annotations

import getpass
from typing import Any

USER_ACTOR = "user:"
CELERY_ACTOR = "celery"
OAUTH_ACTOR = "oauth:"
# Named so that skipping the journal and the second factor is a choice a reader sees at the
# call: only contour creation (tools.contours.services) and issue_key() treat it so.
SCAFFOLDING = "scaffolding"


def required(actor: str) -> str:
    """`actor`, refused when it names no one (ValueError): a safety service never acts, and
    never skips its journal entry, for an unnamed caller."""
    if not isinstance(actor, str) or not actor.strip():
        raise ValueError(
            "actor is required: name who acts (audit.actors), or SCAFFOLDING "
            "for setup no person did"
        )
    return actor


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
