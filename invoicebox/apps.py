"""Invoicebox API v3: the httpx client (the sandbox is the app sandbox/)."""

from django.apps import AppConfig


class InvoiceboxConfig(AppConfig):
    name = "invoicebox"
    label = "invoicebox"
    verbose_name = "Инвойсбокс"
