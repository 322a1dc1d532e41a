"""Which Invoicebox endpoint a contour may talk to: its modes and the URL policy of each."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from django.conf import settings
from django.db import models


class InvoiceboxMode(models.TextChoices):
    SANDBOX = "sandbox", "песочница (встроенная)"
    DEMO = "demo", "демо-магазин Инвойсбокс"
    PRODUCTION = "production", "рабочий магазин"
    CUSTOM = "custom", "свой адрес (прокси или тестовый двойник)"


# The official API origin (reference/invoicebox-api.md §1); demo and production use only it.
OFFICIAL_API_ORIGIN = "https://api.invoicebox.ru"
OFFICIAL_MODES = (InvoiceboxMode.DEMO, InvoiceboxMode.PRODUCTION)
LOOPBACK_NAMES = {"localhost"}


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_own_sandbox(url: str) -> bool:
    """This project's sandbox: the configured URL, or its mount on a loopback host or on this
    gateway's own host (another process of the same installation, as the cluster tests run)."""
    sandbox = settings.INVOICEBOX_SANDBOX_BASE_URL.rstrip("/")
    if url == sandbox:
        return True
    parts, mount = urlsplit(url), urlsplit(sandbox).path.rstrip("/")
    own_host = urlsplit(settings.GATEWAY_SITE_URL).hostname
    return (parts.scheme in ("http", "https") and parts.path.rstrip("/") == mount
            and (is_loopback(parts.hostname) or parts.hostname == own_host)
            and not parts.query and not parts.fragment and not parts.username)


def _shown(value: str | None) -> str:
    """A value quoted for a person: «https://…», or "пусто" (never a Python repr like '')."""
    return f"«{value}»" if value else "пусто"


def base_url_problem(mode: str, base_url: str) -> str:
    """Why a base URL is not allowed for a mode (in Russian), or "" when it is."""
    url = (base_url or "").rstrip("/")
    parts = urlsplit(url)
    if mode in OFFICIAL_MODES:
        if url != OFFICIAL_API_ORIGIN:
            return (f"в режиме {mode} адрес API только {OFFICIAL_API_ORIGIN}, а указано "
                    f"{_shown(url)}; другой адрес — режим custom")
        return ""
    if mode == InvoiceboxMode.SANDBOX:
        # The bundled sandbox only: a token must not leave for another host under a mode
        # the admin shows as harmless (issue 13.2; any other host is mode custom).
        return "" if is_own_sandbox(url) else (
            f"в режиме sandbox адрес API — только встроенная песочница "
            f"({settings.INVOICEBOX_SANDBOX_BASE_URL}), а указано {_shown(url)}; другой адрес — "
            "режим custom")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"адрес API должен быть http(s)://хост, а указано {_shown(url)}"
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        return (f"http без шифрования допустим только для локального адреса "
                f"(127.0.0.0/8, ::1, localhost), а указан хост {_shown(parts.hostname)}; нужен https")
    return ""
