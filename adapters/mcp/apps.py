"""MCP adapter as a Django app: only so that `manage.py mcp_stdio` is found."""

from django.apps import AppConfig


class McpAdapterConfig(AppConfig):
    name = "adapters.mcp"
    label = "gateway_mcp"
    verbose_name = "MCP"
