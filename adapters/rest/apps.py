"""REST adapter for assistants (DRF)."""

from django.apps import AppConfig


class RestAdapterConfig(AppConfig):
    name = "adapters.rest"
    label = "gateway_rest"
    verbose_name = "REST"

    def ready(self) -> None:
        # Registers the Bearer scheme of contour keys with drf-spectacular.
        from adapters.rest import openapi  # noqa: F401
