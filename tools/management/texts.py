"""What the commands say to a person, through Django's i18n: Russian where LANGUAGE_CODE is
ru (the default), English otherwise (locale/ru/LC_MESSAGES/django.po)."""

from __future__ import annotations

from django.utils.translation import gettext, ngettext


def no_user(name: str) -> str:
    return gettext("user %(name)s does not exist") % {"name": repr(name)}


def no_user_to_grant(name: str) -> str:
    return gettext("user %(name)s does not exist (add --create to make it)") % {"name": repr(name)}


def no_contour(slug: str) -> str:
    return gettext("contour %(slug)s does not exist") % {"slug": repr(slug)}


def contour_created(slug: str, mode: str, toolsets: str, base_url: str, token: str) -> str:
    return gettext(
        "contour %(slug)s: mode %(mode)s, toolsets %(toolsets)s, base URL "
        "%(base_url)s, token %(token)s"
    ) % {"slug": slug, "mode": mode, "toolsets": toolsets, "base_url": base_url, "token": token}


def own_sandbox_merchant(merchant: str) -> str:
    return gettext(
        "sandbox merchant %(merchant)s: this contour's own, other contours don't see its orders"
    ) % {"merchant": merchant}


def gateway_urls(site: str, slug: str) -> str:
    return gettext(
        "gateway: %(site)s/api/v1/ and %(site)s/mcp (key: manage.py create_api_key %(slug)s)"
    ) % {"site": site, "slug": slug}


def check_the_contour(slug: str) -> str:
    return gettext("check the token and the shop id: manage.py check_contour %(slug)s") % {
        "slug": slug
    }


def devices_removed(name: str, count: int) -> str:
    return ngettext(
        "%(name)s: %(count)d device removed", "%(name)s: %(count)d devices removed", count
    ) % {"name": name, "count": count}


def database_created(name: str) -> str:
    return gettext("created database %(name)s") % {"name": name}


def no_postgres(error: object) -> str:
    return gettext("cannot reach PostgreSQL: %(error)s") % {"error": error}
