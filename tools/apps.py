"""The tool catalog and the shared core every adapter calls."""

from django.apps import AppConfig


class ToolsConfig(AppConfig):
    name = "tools"
    verbose_name = "Инструменты и контуры"
