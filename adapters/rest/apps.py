"""REST adapter for assistants (DRF)."""

from django.apps import AppConfig


class RestAdapterConfig(AppConfig):
    name = "adapters.rest"
    label = "gateway_rest"
    verbose_name = "REST"
