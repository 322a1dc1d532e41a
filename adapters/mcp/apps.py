"""MCP adapter as a Django app: `manage.py mcp_stdio` is found, the `mcp` format registered."""

from django.apps import AppConfig


class McpAdapterConfig(AppConfig):
    name = "adapters.mcp"
    label = "gateway_mcp"
    verbose_name = "MCP"

    def ready(self) -> None:
        from adapters.mcp import FORMATS
        from adapters.mcp.sessions import sessions_gauge
        from tools.formats import registry
        from tools.ops import metrics

        for name, exporter in FORMATS.items():
            registry.register(name, exporter)
        metrics.register_state(sessions_gauge)
