"""The tool catalog and the shared core every adapter calls."""

from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core import checks
from django.db.backends.signals import connection_created

RENAMED = {"GATEWAY_APPROVAL_THRESHOLD_RUB": "GATEWAY_APPROVAL_THRESHOLD_KOPECKS"}


def deprecated_settings(app_configs: Any, **kwargs: Any) -> list[checks.CheckMessage]:
    return [
        checks.Warning(
            f"{old} is deprecated: its value was always in kopecks; rename it to {RENAMED[old]}",
            hint=f"{RENAMED[old]}=10000000 means 100 000,00 ₽",
            id="gateway.W001",
        )
        for old in getattr(settings, "GATEWAY_DEPRECATED_SETTINGS", [])
    ]


def prepare_marked_statements(sender: Any, connection: Any, **kwargs: Any) -> None:
    """DATABASE_PREPARED_STATEMENTS: a new PostgreSQL connection runs the marked statements
    prepared (tools/models/prepared.py: run_prepared)."""
    from tools.models.prepared import run_prepared

    if (
        settings.DATABASE_PREPARED_STATEMENTS
        and connection.vendor == "postgresql"
        and run_prepared not in connection.execute_wrappers
    ):
        connection.execute_wrappers.append(run_prepared)


class ToolsConfig(AppConfig):
    name = "tools"
    verbose_name = "Инструменты и контуры"

    def ready(self) -> None:
        # Imported here: Django imports an AppConfig before any app's models are loaded.
        from invoicebox.client import set_upstream_observer
        from tools.ops.hooks import observe_upstream

        set_upstream_observer(observe_upstream)

        from audit.access import set_contour_source
        from tools.people import roles  # registers the per-contour permissions with django-rules

        set_contour_source(roles.audited_slugs)

        from audit.admin_lists import set_filter_sources
        from tools import catalog
        from tools.models import Contour

        set_filter_sources(
            contours=lambda: list(Contour.objects.order_by("slug").values_list("slug", flat=True)),
            tools=catalog.names,
        )

        from tools.ops import labels

        labels.set_tool_names(frozenset(catalog.names()))
        checks.register(deprecated_settings, checks.Tags.compatibility)
        connection_created.connect(prepare_marked_statements)

        from tools import tasks  # noqa: F401 - every Celery task registered in this process
