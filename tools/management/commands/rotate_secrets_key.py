"""manage.py rotate_secrets_key: re-encrypt every stored secret with the first key.

Rotation: put the new key first in GATEWAY_SECRETS_KEY (new,old), run this command, then
remove the old key from the list.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import connection, transaction

from tools.models import Contour
from tools.secret_box import rotate

SECRET_COLUMNS = ("api_token", "notification_key")


class Command(BaseCommand):
    help = "Re-encrypt stored Invoicebox tokens and notification keys with the first key."

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        table = Contour._meta.db_table
        columns = ", ".join(SECRET_COLUMNS)
        count = 0
        with connection.cursor() as cursor:
            # Raw columns: the ciphertext is rotated without building models (no save rules).
            cursor.execute(f"SELECT id, {columns} FROM {table} FOR UPDATE"  # noqa: S608
                           if connection.features.has_select_for_update
                           else f"SELECT id, {columns} FROM {table}")  # noqa: S608
            for pk, *values in cursor.fetchall():
                rotated = [rotate(value or "") for value in values]
                assignments = ", ".join(f"{name} = %s" for name in SECRET_COLUMNS)
                cursor.execute(f"UPDATE {table} SET {assignments} WHERE id = %s",  # noqa: S608
                               [*rotated, pk])
                count += 1
        self.stdout.write(f"re-encrypted the secrets of {count} contour(s) with the first key")
