"""Changes made with manage.py commands, journaled like the admin's (channel `cli`)."""

from __future__ import annotations

import getpass
from collections.abc import Iterable, Mapping
from typing import Any

from audit import journal


def cli_actor() -> str:
    """Who ran the command, as the operating system knows them (no login exists here)."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # a uid without a passwd entry, e.g. in a container
        return "cli:unknown"


def record_configure(*, contour: str, code: str, message: str, arguments: Mapping[str, Any],
                     secrets: Iterable[str] = ()) -> None:
    journal.record(contour=contour, channel="cli", actor=cli_actor(), tool="",
                   phase="configure", arguments=arguments, status="ok", code=code,
                   message=message, secrets=secrets)
