"""`manage.py sandbox_pay <order_id>`: mark a sandbox order paid, as a payer would."""

from typing import Any

import simplejson
from django.core.management.base import BaseCommand, CommandError, CommandParser

from adapters.invoicebox.sandbox import pay_order


class Command(BaseCommand):
    help = "Mark a sandbox order paid (status completed, paidAt now) and print it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("order_id", help="the order's id (UUID) as the API returned it")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            order = pay_order(options["order_id"])
        except (LookupError, ValueError) as error:
            raise CommandError(str(error)) from error
        # Payment notifications are not sent yet (a later issue hooks into pay_order).
        self.stdout.write(simplejson.dumps(order, use_decimal=True, ensure_ascii=False, indent=2))
