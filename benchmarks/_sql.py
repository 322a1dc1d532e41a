"""SQL accounting for the in-process benchmarks: every statement and commit on Django's
default connection, counted and timed by part of the system and by template."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

_TABLE_RE = re.compile(r'\b(?:FROM|INTO|UPDATE|JOIN)\s+"?([a-z_]+)"?', re.I)


def sql_group(sql: str) -> str:
    """Which part of the system a statement belongs to, by the first table it names."""
    head = sql.lstrip()[:12].upper()
    if head.startswith(("SAVEPOINT", "RELEASE", "ROLLBACK", "BEGIN", "COMMIT")):
        return "transaction control"
    match = _TABLE_RE.search(sql)
    table = match.group(1).lower() if match else ""
    if table.startswith("audit_"):
        return "journal (audit_*)"
    if table.startswith("tools_"):
        return "gateway state (tools_*)"
    if table in ("invoicebox_upstreamwindow", "invoicebox_circuitstate"):
        return "client limiter/breaker"
    if table.startswith("invoicebox_"):
        return "sandbox (upstream)"
    return f"other ({table or head.strip()})"


@dataclass
class SqlMeter:
    """Counts and times every statement and commit on Django's default connection.

    Statements are grouped by sql_group() and by their template (the SQL with %s
    placeholders), so a query that grows with the data shows up by name.
    """

    groups: dict[str, list[float]] = field(default_factory=dict)
    templates: dict[str, list[float]] = field(default_factory=dict)
    samples: dict[str, Any] = field(default_factory=dict)  # template -> one set of params
    active: bool = True

    def _record(self, group: str, template: str, seconds: float) -> None:
        if not self.active:
            return
        self.groups.setdefault(group, [0, 0.0])
        self.groups[group][0] += 1
        self.groups[group][1] += seconds
        self.templates.setdefault(template, [0, 0.0])
        self.templates[template][0] += 1
        self.templates[template][1] += seconds

    @contextmanager
    def installed(self) -> Iterator[SqlMeter]:
        from django.db import connection

        def wrapper(
            execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
        ) -> Any:
            start = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                self._record(sql_group(sql), sql, time.perf_counter() - start)
                if self.active and not many:
                    self.samples.setdefault(sql, params)

        original_commit = connection._commit

        def commit() -> Any:
            start = time.perf_counter()
            try:
                return original_commit()
            finally:
                self._record("transaction control", "COMMIT", time.perf_counter() - start)

        connection._commit = commit  # instrumentation of this benchmark process only
        try:
            with connection.execute_wrapper(wrapper):
                yield self
        finally:
            del connection._commit

    def reset(self) -> None:
        self.groups.clear()
        self.templates.clear()
        self.samples.clear()
