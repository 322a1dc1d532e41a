"""`manage.py sandbox_pay <order_id>`: mark a sandbox order paid, as a payer would, and notify."""

from typing import Any

import simplejson
from django.core.management.base import BaseCommand, CommandError, CommandParser

from sandbox.api import notification_body, pay_order, send_notification


class Command(BaseCommand):
    help = (
        "Mark a sandbox order paid (status completed, paidAt now) and print it; send the "
        "signed payment notification and report the answer on stderr."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("order_id", help="the order's id (UUID) as the API returned it")
        parser.add_argument(
            "--no-notify", action="store_true", help="pay without sending the notification"
        )
        parser.add_argument(
            "--resend",
            action="store_true",
            help="do not pay: send the notification of a paid order again "
            "(Invoicebox retries like this; the receiver must answer "
            "success once more and change nothing)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["resend"]:
                notification_body(options["order_id"])  # LookupError for an unknown order
                order = None
            else:
                order = pay_order(options["order_id"], notify=False)
        except (LookupError, ValueError) as error:
            raise CommandError(str(error)) from error
        if order is not None:
            # stdout stays the order alone, as before notifications existed.
            self.stdout.write(
                simplejson.dumps(order, use_decimal=True, ensure_ascii=False, indent=2)
            )
        if options["no_notify"]:
            return
        delivery = send_notification(options["order_id"])
        report = simplejson.dumps(delivery.as_dict(), ensure_ascii=False)
        (self.stdout if order is None else self.stderr).write(f"notification: {report}")
