"""Changes made with manage.py commands, journaled like the admin's (channel `cli`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from audit import journal
from audit.actors import cli_actor


def record_configure(
    *,
    contour: str,
    code: str,
    message: str,
    arguments: Mapping[str, Any],
    secrets: Iterable[str] = (),
) -> None:
    journal.record(
        contour=contour,
        channel="cli",
        actor=cli_actor(),
        tool="",
        phase="configure",
        arguments=arguments,
        status="ok",
        code=code,
        message=message,
        secrets=secrets,
    )
