"""manage.py create_contour <slug> --mode sandbox|demo|production|custom [...]"""

from __future__ import annotations

import os
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.actors import cli_actor
from tools.contours import api_tokens
from tools.contours.services import ContourSetupError, create_contour
from tools.contours.sites import parse_toolsets, running_site_url
from tools.management import texts
from tools.models import ApiPrefix, InvoiceboxMode
from tools.people.factors import stepup


class Command(BaseCommand):
    help = (
        "Create a contour (an assistant's perimeter). The API token is read from a file or stdin."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--mode", required=True, choices=InvoiceboxMode.values)
        parser.add_argument("--name", default="")
        parser.add_argument(
            "--toolsets",
            default="read",
            help="comma-separated: read, write, refund (read is always on)",
        )
        parser.add_argument(
            "--base-url",
            default="",
            help="only for sandbox and custom; demo and production always use "
            "the official API origin; custom: http only on loopback",
        )
        parser.add_argument(
            "--token-file",
            default="",
            help="file holding the Invoicebox API token, '-' for stdin; "
            "never pass the token itself on the command line",
        )
        parser.add_argument("--merchant-id", default="")
        parser.add_argument(
            "--api-prefix",
            default="v3",
            choices=ApiPrefix.values,
            help="v3 for Invoicebox shops, l3 for Инвойсбокс.Бизнес ones",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        token = self._read_token(options["token_file"])
        site = running_site_url(settings.GATEWAY_STATE_DIR, dict(os.environ))
        base_url = options["base_url"]
        sandbox = options["mode"] == InvoiceboxMode.SANDBOX
        if sandbox and not base_url and "INVOICEBOX_SANDBOX_BASE_URL" not in os.environ:
            # The bundled sandbox answers on the port the gateway runs on, not on 8000.
            base_url = f"{site}/sandbox/invoicebox"
        try:
            contour = create_contour(
                options["slug"],
                mode=options["mode"],
                name=options["name"],
                toolsets=parse_toolsets(options["toolsets"]),
                base_url=base_url,
                token=token,
                merchant_id=options["merchant_id"],
                own_sandbox_merchant=True,
                actor=cli_actor(),
                channel="cli",
                api_prefix=options["api_prefix"],
                step_up=stepup.from_shell(),
            )
        except ContourSetupError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            texts.contour_created(
                contour.slug,
                contour.mode,
                ",".join(contour.toolsets),
                contour.base_url,
                contour.masked_token,
            )
        )
        if sandbox and not token:
            self.stdout.write(texts.own_sandbox_merchant(str(contour.merchant_id)))
        self.stdout.write(texts.gateway_urls(site, contour.slug))
        if not sandbox:
            self.stdout.write(texts.check_the_contour(contour.slug))

    def _read_token(self, source: str) -> str:
        return read_token_option(source)


def read_token_option(source: str) -> str:
    """--token-file's token, cleaned (tools.contours.api_tokens); a CommandError in Russian naming the
    file when it can't be used."""
    try:
        return api_tokens.read_file(source, sys.stdin.read() if source == "-" else None)
    except api_tokens.TokenInputError as error:
        raise CommandError(str(error)) from None
