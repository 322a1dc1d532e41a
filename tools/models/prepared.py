"""A model query compiled once per thread and database connection, run with new values.

The ORM builds and compiles a queryset's SQL on every evaluation; for a query run on every
call with only its values changing (the key lookup, the MCP session), that is most of its cost. Here the SQL,
its converters and how a row becomes model instances are worked out once, from the ORM's own
compiler, and each call sends that SQL with its values and reads the row: the database is
still asked every time, nothing of a row is kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from django.db import connections
from django.db.models import Model, QuerySet

# Django's private helper for select_related rows: django-stubs leave it out.
from django.db.models.query import get_related_populators  # type: ignore[attr-defined]

M = TypeVar("M", bound=Model)


class _Compiled:
    """One compiled form of the query, for one connection."""

    def __init__(self, queryset: QuerySet[Any], markers: Sequence[Any], alias: str) -> None:
        compiler = queryset.query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        self.sql = sql
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
