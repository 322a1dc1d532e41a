"""manage.py ensure_database: create the PostgreSQL database DATABASE_URL names, if missing."""

from __future__ import annotations

from typing import Any

import psycopg
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from psycopg import sql

from tools.management import texts


class Command(BaseCommand):
    help = "Create the configured PostgreSQL database when it does not exist (SQLite: nothing)."

    def handle(self, *args: Any, **options: Any) -> None:
        db = settings.DATABASES["default"]
        if "postgresql" not in db["ENGINE"]:
            return
        params: dict[str, Any] = {
            "host": db.get("HOST") or None,
            "port": db.get("PORT") or None,
            "user": db.get("USER") or None,
            "password": db.get("PASSWORD") or None,
        }
        try:
            with psycopg.connect(dbname="postgres", autocommit=True, **params) as conn:
                exists = conn.execute(
                    "select 1 from pg_database where datname = %s", (db["NAME"],)
                ).fetchone()
                if not exists:
                    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db["NAME"])))
                    self.stdout.write(texts.database_created(db["NAME"]))
        except psycopg.Error as error:
            raise CommandError(texts.no_postgres(error)) from None
