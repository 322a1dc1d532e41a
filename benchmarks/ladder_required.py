"""The gateway's own code for the ladder's `journal` and `core` rungs (benchmarks/ladder_server.py).

Importing this module sets Django up (DJANGO_SETTINGS_MODULE, default config.settings) on the
run's database, DATABASE_URL, which benchmarks.cost_per_call migrated and seeded with one
contour and its key (benchmarks/_common.seed_key); LADDER_KEY is that key. The key and its
contour are read once (the ORM) and kept: the rungs' per-call key read is hand-written SQL.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from django.db import connection  # noqa: E402 - after django.setup()

from adapters.mcp.http import CHANNEL  # noqa: E402
from adapters.mcp.server import Caller  # noqa: E402
from tools import catalog, phrases  # noqa: E402
from tools.errors import Outcome  # noqa: E402
from tools.models import AUTHENTICATED_KEY, ApiKey, Contour, sha256_hex  # noqa: E402
from tools.pipeline import gateway  # noqa: E402
from tools.pipeline.call_trace import Trace, journal_outcome  # noqa: E402

TOOL = "get_order"
KEY_HASH = sha256_hex(os.environ.get("LADDER_KEY", ""))
# What the core says of a read of get_order (tools/phrases.py), for the `journal` rung's entry.
_SPEC = catalog.get(TOOL)
assert _SPEC is not None
READ_MESSAGE = phrases.read_message(_SPEC, {})
# The `core` rung's key read: the row the gateway reads on every call (the key by its hash,
# its contour joined, the database's clock), hand-written; only the key's last use is taken
# from it (note_use writes it at most once a minute, as in the gateway).
KEY_SQL = (
    "SELECT k.last_used_at, k.last_used_channel, now(), k.*, c.* "  # noqa: S608 - table names
    f'FROM "{ApiKey._meta.db_table}" k JOIN "{Contour._meta.db_table}" c '
    "ON c.id = k.contour_id WHERE k.key_hash = %s"
)


@functools.cache
def bench_key() -> ApiKey:
    """The run's key and its contour, read once."""
    return ApiKey.objects.select_related("contour").get(key_hash=KEY_HASH)


@functools.cache
def caller() -> Caller:
    return Caller.of_key(bench_key(), CHANNEL)


def database_connection() -> Any:
    """This thread's Django connection, as psycopg's: the hand-written statements share it
    with the gateway's code, one connection per thread as in the gateway."""
    connection.ensure_connection()
    return connection.connection


def journal_read(arguments: dict[str, Any], order: dict[str, Any]) -> Outcome:
    """The read's journal entry as the core makes it (tools/pipeline/call_trace.py: build with
    redaction of secrets and personal values, the lane's append with its HMAC link, the ops
    hooks), on the gateway's audit_journalentry; the outcome carries its journal id."""
    who = caller()
    trace = Trace(
        contour=who.contour,
        channel=who.channel,
        actor=who.actor,
        tool=TOOL,
        arguments=arguments,
        phase="read",
        replies=[order.get("data")],
    )
    outcome = Outcome(status="ok", code="ok", message=READ_MESSAGE, data=order)
    return journal_outcome(trace, outcome)


def core_call(key_row: tuple[Any, ...], name: str, arguments: dict[str, Any]) -> Outcome:
    """The gateway's whole core call for the key read in `key_row` (KEY_SQL's)."""
    key = bench_key()
    key.last_used_at, key.last_used_channel = key_row[0], key_row[1]
    AUTHENTICATED_KEY.set(key)  # as ApiKey.authenticate leaves it: the core reads no key again
    who = caller()
    return gateway.call(who.contour, name, arguments, channel=who.channel, actor=who.actor)
