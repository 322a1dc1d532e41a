"""Function-calling adapters as a Django app: registers their platforms and `?format=` exporters."""

from django.apps import AppConfig


class FunctionsAdapterConfig(AppConfig):
    name = "adapters.functions"
    label = "gateway_functions"
    verbose_name = "Function calling"

    def ready(self) -> None:
        # Imported here: Django imports an AppConfig before any app's models are loaded.
        from adapters.functions.formats import PLATFORMS
        from tools.formats import registry

        for platform in PLATFORMS:
            registry.register_platform(platform)
