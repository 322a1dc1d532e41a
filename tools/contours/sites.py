"""Where the gateway is reached (its site URL, a contour's notification URL) and the command
line's toolset list. Creating and changing contours: tools/contours/services.py."""

from __future__ import annotations

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
    """Written by `make demo` (seed_demo): where the server it starts will listen."""
    path = Path(state_dir)
    path.mkdir(parents=True, exist_ok=True)
    (path / SITE_URL_FILE).write_text(settings.GATEWAY_SITE_URL + "\n")


def running_site_url(state_dir: str | Path, environ: dict[str, str]) -> str:
    """The gateway's own URL as a later command should print it: the environment when it says
    (PORT, GATEWAY_SITE_URL), else what `make demo` last served on, else the settings."""
    if "GATEWAY_SITE_URL" in environ or "PORT" in environ:
        return settings.GATEWAY_SITE_URL
    try:
        remembered = (Path(state_dir) / SITE_URL_FILE).read_text().strip()
    except OSError:
        remembered = ""
    return remembered.rstrip("/") or settings.GATEWAY_SITE_URL


def notification_url(contour: Contour) -> str:
    """Where Invoicebox should send this contour's payment notifications."""
    return f"{settings.GATEWAY_SITE_URL}/invoicebox/notifications/{contour.slug}"
