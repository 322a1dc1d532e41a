"""The tool catalog and the shared core every adapter calls."""

from django.apps import AppConfig


class ToolsConfig(AppConfig):
    name = "tools"
    verbose_name = "Инструменты и контуры"

    def ready(self) -> None:
        from adapters.invoicebox.client import set_upstream_observer
        from tools.ops.hooks import observe_upstream

        set_upstream_observer(observe_upstream)
