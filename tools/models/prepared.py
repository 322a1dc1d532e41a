"""A model query compiled once per thread and database connection, run with new values.

The ORM builds and compiles a queryset's SQL on every evaluation; for a query run on every
call with only its values changing (the key lookup, the MCP session), that is most of its cost. Here the SQL,
its converters and how a row becomes model instances are worked out once, from the ORM's own
compiler, and each call sends that SQL with its values and reads the row: the database is
still asked every time, nothing of a row is kept.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import weakref
from collections.abc import Callable, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Generic, TypeVar
from uuid import UUID

import psycopg
from django.db import ProgrammingError, connections
from django.db.models import Model, QuerySet

# Django's private helper for select_related rows: django-stubs leave it out.
from django.db.models.query import get_related_populators  # type: ignore[attr-defined]
from psycopg.types.json import Json, Jsonb

M = TypeVar("M", bound=Model)
logger = logging.getLogger(__name__)


class _Compiled:
    """One compiled form of the query, for one connection."""

    def __init__(self, queryset: QuerySet[Any], markers: Sequence[Any], alias: str) -> None:
        compiler = queryset.query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        self.sql = sql + MARKER  # run on every call: prepared where that is on
        # Where each marker value stands among the parameters; the others are constants of
        # the query (none in the key lookup, but kept as compiled).
        self.params = list(params)
        self.slots = [self.params.index(marker) for marker in markers]
        if len(set(self.slots)) != len(markers) or sum(
            1 for p in self.params if p in markers
        ) != len(markers):
            raise ValueError("each marker must stand exactly once among the query's parameters")
        select, klass_info = compiler.select, compiler.klass_info
        self.converters = compiler.get_converters([s[0] for s in select[: compiler.col_count]])
        self.compiler = compiler
        if klass_info is None:  # values_list(): rows only
            return
        self.model: type[Model] = klass_info["model"]
        fields = klass_info["select_fields"]
        self.start, self.end = fields[0], fields[-1] + 1
        self.init_list = [s[0].target.attname for s in select[self.start : self.end]]
        self.related = get_related_populators(klass_info, select, alias)
        self.annotations = dict(compiler.annotation_col_map)


class PreparedQuery(Generic[M]):
    """`build(*markers)` returns the queryset with marker values where the real ones go (each
    marker a value the query's own parameters never hold, of the type the field prepares to
    itself: a string, an integer); `first(*values)` runs it with the real values and returns
    the first instance or None; `row(*values)` the first row of a values_list() query."""

    def __init__(
        self, build: Callable[..., QuerySet[Any]], markers: Sequence[Any], using: str = "default"
    ) -> None:
        self.build, self.markers, self.alias = build, tuple(markers), using
        self._local = threading.local()

    def _compiled(self) -> _Compiled:
        connection = connections[self.alias]
        compiled: tuple[Any, _Compiled] | None = getattr(self._local, "compiled", None)
        # Django's connection object is per thread and outlives its database sessions: the
        # same SQL stays right for it across reconnects.
        if compiled is None or compiled[0] is not connection:
            compiled = (connection, _Compiled(self.build(*self.markers), self.markers, self.alias))
            self._local.compiled = compiled
        return compiled[1]

    def _fetch(self, values: Sequence[Any]) -> tuple[_Compiled, Any]:
        compiled = self._compiled()
        params = list(compiled.params)
        for slot, value in zip(compiled.slots, values, strict=True):
            params[slot] = value
        with connections[self.alias].cursor() as cursor:
            cursor.execute(compiled.sql, params)
            row = cursor.fetchone()
        if row is not None and compiled.converters:
            [row] = compiled.compiler.apply_converters([row], compiled.converters)
        return compiled, row

    def row(self, *values: Any) -> tuple[Any, ...] | None:
        _, row = self._fetch(values)
        return None if row is None else tuple(row)

    def first(self, *values: Any) -> M | None:
        compiled, row = self._fetch(values)
        if row is None:
            return None
        obj: M = compiled.model.from_db(
            self.alias,
            compiled.init_list,  # type: ignore[assignment]
            row[compiled.start : compiled.end],
        )
        for populator in compiled.related:
            populator.populate(row, obj)
        for name, position in compiled.annotations.items():
            setattr(obj, name, row[position])
        return obj


# -- statements prepared per connection (DATABASE_PREPARED_STATEMENTS) -------------------------
#
# A statement that ends with MARKER (from the message's start or its previous `;`) is, with
# DATABASE_PREPARED_STATEMENTS on PostgreSQL, prepared once per connection by SQL PREPARE and
# sent as `EXECUTE name(values)` from then on: PostgreSQL neither parses nor plans it again
# (planning is two thirds of its time per read). The values are still quoted into the message
# by psycopg on the client, as for every other statement, so a message of several statements
# (the journal's `BEGIN; …` and `…; COMMIT`) stays one message; psycopg's own prepared
# statements would need every statement bound by the server. audit/ and invoicebox/ write the
# marker as text: they import nothing of tools/.
MARKER = " /*prepared*/"
_PLACEHOLDER = re.compile(r"%[%s]")
# The type a parameter is declared with, by its Python type: what psycopg would bind it as
# (a text or an absent value is left for PostgreSQL to infer from its place, as a quoted one).
_DECLARED: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "bigint"),
    (float, "double precision"),
    (Decimal, "numeric"),
    (datetime, "timestamptz"),
    (date, "date"),
    (UUID, "uuid"),
    (Jsonb, "jsonb"),
    (Json, "json"),
    (bytes, "bytea"),
)
# The statements prepared on each psycopg connection (a new connection starts with none), and
# those PostgreSQL refused to prepare.
_prepared_on: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
_unpreparable: set[str] = set()


def _declared(value: Any) -> str:
    if isinstance(value, datetime) and value.tzinfo is None:
        return "timestamp"
    return next((name for kind, name in _DECLARED if isinstance(value, kind)), "unknown")


def _prepare_text(name: str, statement: str, values: Sequence[Any]) -> str:
    numbers = iter(range(1, len(values) + 1))
    body = _PLACEHOLDER.sub(lambda m: "%" if m.group() == "%%" else f"${next(numbers)}", statement)
    types = f" ({', '.join(_declared(v) for v in values)})" if values else ""
    return f"PREPARE {name}{types} AS {body}"


def run_prepared(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]
) -> Any:
    """Django's execute wrapper (tools/apps.py installs it on a new PostgreSQL connection when
    DATABASE_PREPARED_STATEMENTS is on): a marked statement sent as EXECUTE of its statement
    prepared on this connection, else as it came."""
    end = sql.find(MARKER)
    if end < 0 or many:
        return execute(sql, params, many, context)
    start = sql.rfind(";", 0, end) + 1
    while start < end and sql[start].isspace():
        start += 1
    statement = sql[start:end]
    values = list(params or ())
    before = sql.count("%s", 0, start)
    own = values[before : before + statement.count("%s")]
    name = "gw_" + hashlib.blake2b(statement.encode(), digest_size=12).hexdigest()
    raw = context["connection"].connection
    done = _prepared_on.setdefault(raw, set())
    if name not in done:
        wrap_errors = context["connection"].wrap_database_errors
        if name in _unpreparable or not _prepare(raw, wrap_errors, name, statement, own):
            return execute(sql, params, many, context)
        done.add(name)
    arguments = f"({', '.join(['%s'] * len(own))})" if own else ""
    message = f"{sql[:start]}EXECUTE {name}{arguments}{sql[end + len(MARKER) :]}"
    try:
        return execute(message, params, many, context)
    except ProgrammingError as error:
        if isinstance(error.__cause__, psycopg.errors.InvalidSqlStatementName):
            # Something dropped them (DISCARD ALL, a pooler's other server connection): this
            # call fails as a database error, the next one prepares them again.
            _prepared_on.pop(raw, None)
        raise


def _prepare(raw: Any, wrap_errors: Any, name: str, statement: str, values: Sequence[Any]) -> bool:
    """PREPARE on the connection, once; inside a transaction under a savepoint, so that a
    statement PostgreSQL cannot prepare (a type it cannot infer) fails alone and is sent as it
    is from then on."""
    text = _prepare_text(name, statement, values)
    # Outside autocommit psycopg begins a transaction with the first statement.
    open_transaction = (
        not raw.autocommit or raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
    )
    with wrap_errors, raw.cursor() as cursor:  # a lost connection is Django's error, as ever
        if open_transaction:
            cursor.execute("SAVEPOINT gw_prepare")
        try:
            cursor.execute(text)
        except psycopg.ProgrammingError as error:  # the statement's own fault, not the server's
            if open_transaction:
                cursor.execute("ROLLBACK TO SAVEPOINT gw_prepare")
                cursor.execute("RELEASE SAVEPOINT gw_prepare")
            _unpreparable.add(name)
            logger.warning("statement %s not prepared: %s", name, type(error).__name__)
            return False
        if open_transaction:
            cursor.execute("RELEASE SAVEPOINT gw_prepare")
    return True
