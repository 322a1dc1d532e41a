"""ASGI entry point: one process serves the admin, REST, the sandbox (and later MCP)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_asgi_application()
