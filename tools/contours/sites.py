"""Where the gateway is reached (its site URL, a contour's notification URL) and the command
line's toolset list. Creating and changing contours: tools/contours/services.py."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings

from tools.errors import ContourSetupError
from tools.models import Contour, Toolset


def parse_toolsets(raw: str) -> list[str]:
    toolsets = [part.strip() for part in raw.split(",") if part.strip()]
    unknown = sorted(set(toolsets) - set(Toolset.values))
    if unknown:
        raise ContourSetupError(
            f"unknown toolsets {', '.join(unknown)}; known: {', '.join(Toolset.values)}"
        )
    if Toolset.READ not in toolsets:
        toolsets.insert(0, Toolset.READ)
    return list(dict.fromkeys(toolsets))


SITE_URL_FILE = "site-url"


def remember_site_url(state_dir: str | Path) -> None:
    """Written by the server as it starts (config/asgi.py's lifespan): where it listens, and
    which process it is, so that a later command can tell a running server from a gone one."""
    path = Path(state_dir)
    path.mkdir(parents=True, exist_ok=True)
    (path / SITE_URL_FILE).write_text(f"{settings.GATEWAY_SITE_URL}\n{os.getpid()}\n")


def forget_site_url(state_dir: str | Path) -> None:
    """As the server stops: its record goes, unless another server has written its own since."""
    path = Path(state_dir) / SITE_URL_FILE
    if _read(path)[1] == os.getpid():
        path.unlink(missing_ok=True)


def _read(path: Path) -> tuple[str, int | None]:
    try:
        lines = path.read_text().split()
    except OSError:
        return "", None
    pid = lines[1] if len(lines) > 1 else ""
    return (lines[0] if lines else ""), (int(pid) if pid.isdigit() else None)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    return True


def running_site_url(state_dir: str | Path, environ: dict[str, str]) -> str:
    """The gateway's own URL as a later command should print it: the environment when it says
    (PORT, GATEWAY_SITE_URL), else the server running now, else the settings. A record whose
    server is gone (or one without its process, as older versions wrote) is not believed: it
    kept printing the last server's port."""
    if "GATEWAY_SITE_URL" in environ or "PORT" in environ:
        return settings.GATEWAY_SITE_URL
    remembered, pid = _read(Path(state_dir) / SITE_URL_FILE)
    if remembered and pid is not None and _alive(pid):
        return remembered.rstrip("/")
    return settings.GATEWAY_SITE_URL


def notification_url(contour: Contour) -> str:
    """Where Invoicebox should send this contour's payment notifications."""
    return f"{settings.GATEWAY_SITE_URL}/invoicebox/notifications/{contour.slug}"
