"""Which Invoicebox endpoint a contour may talk to: its modes and the URL policy of each."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.db import models

from invoicebox.hosts import is_loopback, is_own_sandbox
from tools.public_http import is_internal_literal


class InvoiceboxMode(models.TextChoices):
    SANDBOX = "sandbox", "песочница (встроенная)"
    DEMO = "demo", "демо-магазин Инвойсбокс"
    PRODUCTION = "production", "рабочий магазин"
    CUSTOM = "custom", "свой адрес (прокси или тестовый двойник)"


# The official API origin (docs/invoicebox-api.md); demo and production use only it.
OFFICIAL_API_ORIGIN = "https://api.invoicebox.ru"
OFFICIAL_MODES = (InvoiceboxMode.DEMO, InvoiceboxMode.PRODUCTION)


def _shown(value: str | None) -> str:
    """A value quoted for a person: «https://…», or "пусто" (never a Python repr like '')."""
    return f"«{value}»" if value else "пусто"


def base_url_problem(mode: str, base_url: str) -> str:
    """Why a base URL is not allowed for a mode (in Russian), or "" when it is.

    Userinfo (`user:password@`), a query string and a fragment are refused in every mode, and
    before anything echoes the URL: they would carry credentials into the journal, the
    command's output and the conformance report, and the client appends paths to the base URL
    (a query in it would end up in the middle of every request's URL).
    """
    url = (base_url or "").rstrip("/")
    parts = urlsplit(url)
    if "@" in parts.netloc:
        return (
            "в адресе API не может быть имени и пароля (user:password@): только схема, хост и путь"
        )
    if parts.query or parts.fragment or "?" in url or "#" in url:
        return (
            "в адресе API не может быть параметров запроса (?…) или фрагмента (#…): "
            "только схема, хост и путь"
        )
    if mode in OFFICIAL_MODES:
        if url != OFFICIAL_API_ORIGIN:
            return (
                f"в режиме {mode} адрес API только {OFFICIAL_API_ORIGIN}, а указано "
                f"{_shown(url)}; другой адрес — режим custom"
            )
        return ""
    if mode == InvoiceboxMode.SANDBOX:
        # The bundled sandbox only: a token must not leave for another host under a mode
        # the admin shows as harmless (any other host is mode custom).
        return (
            ""
            if is_own_sandbox(url)
            else (
                f"в режиме sandbox адрес API — только встроенная песочница "
                f"({settings.INVOICEBOX_SANDBOX_BASE_URL}), а указано {_shown(url)}; другой адрес — "
                "режим custom"
            )
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"адрес API должен быть http(s)://хост, а указано {_shown(url)}"
    if not settings.GATEWAY_ALLOW_PRIVATE_UPSTREAM and is_internal_literal(parts.hostname):
        # Names are checked when connecting (tools.public_http); a literal is refused here.
        return (
            f"адрес API {_shown(parts.hostname)} — локальный или внутренний: в этой "
            "установке запрещено (включает GATEWAY_ALLOW_PRIVATE_UPSTREAM=true)"
        )
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        return (
            f"http без шифрования допустим только для локального адреса "
            f"(127.0.0.0/8, ::1, localhost), а указан хост {_shown(parts.hostname)}; нужен https"
        )
    return ""


class ApiPrefix(models.TextChoices):
    """The API's path prefix (docs api/api.md:29-31)."""

    V3 = "v3", "/v3/ — магазины Инвойсбокс (по умолчанию)"
    L3 = "l3", "/l3/ — магазины Инвойсбокс.Бизнес (business.invoicebox.ru)"


def api_prefix_problem(prefix: str) -> str:
    """Why a prefix is not one the API has (in Russian), or "" when it is."""
    if prefix in ApiPrefix.values:
        return ""
    return f"префикс API — только {' или '.join(ApiPrefix.values)}, получен {prefix!r}"
