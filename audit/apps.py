"""The append-only, hash-chained journal of every call."""

from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Журнал"
