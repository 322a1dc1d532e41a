"""Counted nouns in Russian through Django's plural machinery: `{% count_of n opts %}`.

A model's verbose_name/verbose_name_plural are two forms; Russian needs three after a number
(1 контур, 2 контура, 5 контуров). These msgids are translated with their plural forms in
locale/ru/LC_MESSAGES/django.po and chosen by ngettext.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.translation import gettext, ngettext

register = template.Library()

# model label -> (singular, plural) msgids; Russian forms live in the catalog.
_NOUNS: dict[str, tuple[str, str]] = {
    "tools.contour": ("%(count)s contour", "%(count)s contours"),
    "tools.apikey": ("%(count)s API key", "%(count)s API keys"),
    "tools.ceiling": ("%(count)s ceiling", "%(count)s ceilings"),
    "tools.pendingconfirmation": ("%(count)s confirmation", "%(count)s confirmations"),
    "tools.operation": ("%(count)s operation", "%(count)s operations"),
    "tools.trackedorder": ("%(count)s order", "%(count)s orders"),
    "tools.processednotification": ("%(count)s notification", "%(count)s notifications"),
    "tools.contourrole": ("%(count)s role", "%(count)s roles"),
    "tools.operatoralert": ("%(count)s alert", "%(count)s alerts"),
    "audit.journalentry": ("%(count)s journal entry", "%(count)s journal entries"),
    "audit.auditortoken": ("%(count)s auditor token", "%(count)s auditor tokens"),
    "auth.user": ("%(count)s user", "%(count)s users"),
}


@register.simple_tag
def count_of(count: int, opts: Any, paginator: Any = None) -> str:
    """ "2 контура" for a known model; "всего: 2" (right for any noun) for another; "больше
    10000" when a bounded paginator (audit/admin_lists.py) stopped counting."""
    if getattr(paginator, "bounded", False):
        return f"больше {paginator.bound}: уточните фильтр, чтобы увидеть остальные"
    forms = _NOUNS.get(opts.label_lower)
    if forms is None:
        return gettext("total: %(count)s") % {"count": count}
    return ngettext(*forms, count) % {"count": count}
