"""Function-calling adapters as a Django app: registers their `?format=` exporters."""

from django.apps import AppConfig


class FunctionsAdapterConfig(AppConfig):
    name = "adapters.functions"
    label = "gateway_functions"
    verbose_name = "Function calling"

    def ready(self) -> None:
        from adapters.functions.formats import FORMATS, OPTIONS
        from tools.formats import registry

        for name, exporter in FORMATS.items():
            registry.register(name, exporter, options=OPTIONS.get(name))
