"""The Hermes text adapter as a Django app: registers the `hermes` format."""

from django.apps import AppConfig


class TextAdapterConfig(AppConfig):
    name = "adapters.text"
    label = "gateway_text"
    verbose_name = "Hermes text"

    def ready(self) -> None:
        # Imported here: Django imports an AppConfig before any app's models are loaded.
        from adapters.text.formats import FORMATS, PAYLOADS
        from tools.formats import registry

        for name, exporter in FORMATS.items():
            registry.register(name, exporter, payload=PAYLOADS.get(name))
