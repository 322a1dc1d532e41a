"""MCP adapter as a Django app: `manage.py mcp_stdio` is found, the `mcp` format registered."""

from django.apps import AppConfig


class McpAdapterConfig(AppConfig):
    name = "adapters.mcp"
    label = "gateway_mcp"
    verbose_name = "MCP"

    def ready(self) -> None:
        # Imported here: Django imports an AppConfig before any app's models are loaded.
        from adapters.mcp import FORMATS
        from adapters.mcp.sessions import sessions_gauge
        from tools.formats import registry
        from tools.ops import scrape

        for name, exporter in FORMATS.items():
            registry.register(name, exporter)
        scrape.register_state(sessions_gauge)
