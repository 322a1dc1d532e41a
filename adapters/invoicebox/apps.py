"""Invoicebox API v3: the httpx client and the bundled sandbox."""

from django.apps import AppConfig


class InvoiceboxConfig(AppConfig):
    name = "adapters.invoicebox"
    label = "invoicebox"
    verbose_name = "Инвойсбокс (песочница)"
