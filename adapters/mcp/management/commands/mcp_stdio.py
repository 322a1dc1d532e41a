"""manage.py mcp_stdio --contour <slug>: MCP over stdin/stdout for a client that starts it locally."""

from __future__ import annotations

import logging
from typing import Any

import anyio
from django.core.management.base import BaseCommand, CommandError, CommandParser
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST

from adapters.mcp.drain import drained
from adapters.mcp.server import Caller, build_server, run_sync
from tools.models import Contour

CHANNEL = "mcp-stdio"
logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Serve the contour's tools over MCP stdio (a local perimeter: the client starts this "
        "process). Only protocol on stdout; logs go to stderr."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--contour", required=True, help="slug of the contour to serve")

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["contour"]
        contour = Contour.objects.filter(slug=slug).first()
        if contour is None:
            known = ", ".join(Contour.objects.order_by("slug").values_list("slug", flat=True))
            raise CommandError(
                f"контур {slug!r} не найден; есть: {known or 'ни одного'} "
                "(создать: manage.py create_contour <код> --mode sandbox)"
            )
        actor = f"stdio:{slug}"

        def reload() -> Contour:
            # Fresh per request: an owner may switch writes or toolsets while the client runs.
            found = Contour.objects.filter(pk=contour.pk).first()
            if found is None:
                raise MCPError(
                    INVALID_REQUEST,
                    f"контур {slug!r} удалён: перезапустите клиент с другим контуром",
                )
            return found

        async def resolve(ctx: ServerRequestContext[Any, Any]) -> Caller:
            return Caller(contour=await run_sync(reload), channel=CHANNEL, actor=actor)

        server = build_server(resolve)

        async def serve() -> None:
            async with (
                stdio_server() as (stdin, stdout),
                drained(stdin, stdout) as (read_stream, write_stream),
            ):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        self.stderr.write(f"mcp_stdio: serving contour {slug!r} on stdin/stdout")
        try:
            anyio.run(serve)
        except KeyboardInterrupt:
            logger.info("mcp_stdio: interrupted")
