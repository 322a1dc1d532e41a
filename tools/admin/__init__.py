"""Owners' admin: contours (toolsets, policy, ceilings, credentials), keys, the tool catalog,
read-only records. Every save calls a service of tools/services/."""

from __future__ import annotations

from django.contrib import admin

admin.site.site_header = "Шлюз Инвойсбокс для ассистентов"
admin.site.site_title = "Шлюз Инвойсбокс"
admin.site.index_title = "Управление шлюзом"
admin.site.site_url = "/approvals/"  # "Открыть сайт": the operators' queue
# The model list is on the index page; the sidebar would take the width the journal needs.
admin.site.enable_nav_sidebar = False

# Registered on import (Django's autodiscover imports this package).
from tools.admin import contours, keys, records  # noqa: E402, F401

# The people admin (a superuser's reset of someone's second factor).
from tools.people.factors import admin as _factors_admin  # noqa: E402, F401
