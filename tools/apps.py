"""The tool catalog and the shared core every adapter calls."""

from django.apps import AppConfig


class ToolsConfig(AppConfig):
    name = "tools"
    verbose_name = "Инструменты и контуры"

    def ready(self) -> None:
        from adapters.invoicebox.client import set_upstream_observer
        from tools.ops.hooks import observe_upstream

        set_upstream_observer(observe_upstream)

        from audit.access import set_contour_source
        from tools import roles  # registers the per-contour permissions with django-rules

        set_contour_source(roles.audited_slugs)
