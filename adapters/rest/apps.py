"""REST adapter for assistants (DRF)."""

from django.apps import AppConfig


class RestAdapterConfig(AppConfig):
    name = "adapters.rest"
    label = "gateway_rest"
    verbose_name = "REST"

    def ready(self) -> None:
        # Imported here: Django imports an AppConfig before any app's models are loaded.
        # Registers the Bearer scheme of contour keys with drf-spectacular.
        from adapters.rest import openapi  # noqa: F401
