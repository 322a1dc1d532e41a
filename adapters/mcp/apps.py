"""MCP adapter as a Django app: `manage.py mcp_stdio` is found, the `mcp` format registered."""

from django.apps import AppConfig


class McpAdapterConfig(AppConfig):
    name = "adapters.mcp"
    label = "gateway_mcp"
    verbose_name = "MCP"

    def ready(self) -> None:
        from adapters.mcp import FORMATS
        from tools.formats import registry

        for name, exporter in FORMATS.items():
            registry.register(name, exporter)
