"""The bundled Invoicebox sandbox: an optional app (GATEWAY_SANDBOX), a fake of API v3."""

from django.apps import AppConfig


class SandboxConfig(AppConfig):
    name = "sandbox"
    label = "sandbox"
    verbose_name = "Инвойсбокс (песочница)"

    def ready(self) -> None:
        from invoicebox.client import serve_in_process
        from sandbox.api import InProcessTransport
        from sandbox.signals import connect

        serve_in_process(InProcessTransport)
        connect()
