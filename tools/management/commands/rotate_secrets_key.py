"""manage.py rotate_secrets_key: re-encrypt every stored secret with the first key.

Rotation: put the new key first in GATEWAY_SECRETS_KEY (new,old), run this command, then
remove the old key from the list. A secret none of the listed keys decrypts is left as it is
and named (contour and field, never a value): enter it again (set_contour_token, the admin).
"""

from __future__ import annotations

from typing import Any

from cryptography.fernet import InvalidToken
from django.core.management.base import BaseCommand
from django.db import connection, transaction

from tools.models import Contour
from tools.secret_box import rotate

SECRET_COLUMNS = ("api_token", "notification_key", "alert_webhook_secret")


class Command(BaseCommand):
    help = (
        "Перешифровать сохранённые токены Инвойсбокс, ключи подписи и секреты вебхуков "
        "первым ключом GATEWAY_SECRETS_KEY; нечитаемые пропускаются и называются."
    )

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        table = Contour._meta.db_table
        columns = ", ".join(SECRET_COLUMNS)
        count = 0
        skipped: list[str] = []
        with connection.cursor() as cursor:
            # Raw columns: the ciphertext is rotated without building models (no save rules).
            cursor.execute(
                f"SELECT id, slug, {columns} FROM {table} FOR UPDATE"  # noqa: S608
                if connection.features.has_select_for_update
                else f"SELECT id, slug, {columns} FROM {table}"  # noqa: S608
            )
            for pk, slug, *values in cursor.fetchall():
                rotated = []
                for name, value in zip(SECRET_COLUMNS, values, strict=True):
                    try:
                        rotated.append(rotate(value or ""))
                    except InvalidToken:  # no listed key reads it: kept, to be entered again
                        rotated.append(value)
                        skipped.append(f"{slug}.{name}")
                assignments = ", ".join(f"{name} = %s" for name in SECRET_COLUMNS)
                cursor.execute(
                    f"UPDATE {table} SET {assignments} WHERE id = %s",  # noqa: S608
                    [*rotated, pk],
                )
                count += 1
        self.stdout.write(f"секреты контуров перешифрованы первым ключом: {count} контур(ов)")
        if skipped:
            self.stdout.write(
                self.style.WARNING(
                    f"не читаются ни одним ключом из GATEWAY_SECRETS_KEY, оставлены как есть: "
                    f"{', '.join(skipped)}. Верните прежний ключ в список или введите их заново "
                    "(manage.py set_contour_token <контур> --token-file ФАЙЛ, или страница "
                    "контура в админке)"
                )
            )
