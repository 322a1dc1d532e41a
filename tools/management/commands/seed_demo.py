"""manage.py seed_demo: the demo contour on the sandbox, one API key, an admin and an operator
(idempotent). The key is issued by this command, so no superuser approves what it prepares
(tools.pipeline.approvals.prepared_by): the demo's operator, who is none, does."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import connection

from audit.actors import cli_actor
from tools.contours.services import connect_sandbox_notifications, create_contour
from tools.keys import services as key_service
from tools.models import ApiKey, Contour, InvoiceboxMode, Role, Toolset
from tools.people import grants as role_service
from tools.people.factors import stepup

SLUG = "demo"


class Command(BaseCommand):
    help = "Create the demo contour, its API key and an admin user; reprint them on later runs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--state-dir",
            default=settings.GATEWAY_STATE_DIR,
            help="where the demo key and admin password are kept (git-ignored)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        state = Path(options["state_dir"]) / "demo" / database_tag()
        state.mkdir(parents=True, exist_ok=True)
        contour = Contour.objects.filter(slug=SLUG).first()
        if contour is None:
            contour = create_contour(
                SLUG,
                mode=InvoiceboxMode.SANDBOX,
                name="Демо-контур (песочница)",
                toolsets=[Toolset.READ, Toolset.WRITE],
                actor=cli_actor(),
                channel="cli",
                step_up=stepup.from_shell(),
            )
        if contour.mode == InvoiceboxMode.SANDBOX:
            # Idempotent; also connects a demo contour seeded before notifications existed.
            connect_sandbox_notifications(contour, own_account=False, claim_shared=True)
        key = self._demo_key(contour, state / "demo-api-key")
        username, password = self._person(state / "demo-admin", "admin", superuser=True)
        operator, operator_password = self._person(
            state / "demo-operator", "operator", superuser=False
        )
        role_service.grant(
            get_user_model().objects.get(username=operator),
            Role.OPERATOR,
            contour,
            actor=cli_actor(),
            channel="cli",
            step_up=stepup.from_shell(),
        )
        base = settings.GATEWAY_SITE_URL
        self.stdout.write(
            "\n".join(
                [
                    "",
                    f"Demo contour '{contour.slug}' on the sandbox ({contour.base_url}),"
                    f" toolsets: {','.join(contour.toolsets)}",
                    f"API key:  {key}",
                    f"Admin:    {base}/admin/  login {username} / password {password}",
                    f"Operator: {base}/approvals/  login {operator} / password {operator_password}"
                    " (approves the demo key's writes)",
                    f"Try:      curl -H 'Authorization: Bearer {key}' {base}/api/v1/tools",
                    f"Kept in:  {state} (this database's own; checked on every run)",
                    "",
                ]
            )
        )

    def _demo_key(self, contour: Contour, path: Path) -> str:
        # Only the hash is in the database, so the demo keeps its plain key in a local file.
        if path.exists():
            saved = path.read_text().strip()
            found = ApiKey.authenticate(saved)
            if found is not None and found.contour_id == contour.id:
                return saved
        _, raw = key_service.issue(
            contour, label="demo", actor=cli_actor(), channel="cli", step_up=stepup.from_shell()
        )
        _write_private(path, raw)
        return raw

    def _person(self, path: Path, username: str, *, superuser: bool) -> tuple[str, str]:
        user_model = get_user_model()
        user = user_model.objects.filter(username=username).first()
        if path.exists() and user is not None:
            saved = path.read_text().strip()
            # Verified, not trusted: the file may predate this database or a manual change.
            if user.check_password(saved) and user.is_active and user.is_superuser == superuser:
                return username, saved
        password = secrets.token_urlsafe(12)
        user, _ = user_model.objects.get_or_create(username=username)
        user.is_staff = user.is_superuser = superuser
        user.is_active = True
        user.set_password(password)
        user.save()
        _write_private(path, password)
        return username, password


def database_tag() -> str:
    """A file-name-safe name of the database in use: each keeps its own demo credentials.

    A key or password minted for one database means nothing in another, so switching
    DATABASE_URL back and forth must find each database's own files again.
    """
    params = connection.settings_dict
    if connection.vendor == "sqlite":
        where = str(Path(str(params["NAME"])).resolve())
        label = Path(where).stem
    else:
        where = f"{params.get('HOST') or 'local'}:{params.get('PORT') or ''}/{params['NAME']}"
        label = f"{params.get('HOST') or 'local'}-{params['NAME']}"
    digest = hashlib.sha256(f"{connection.vendor}|{where}".encode()).hexdigest()[:10]
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label)[:40]
    return f"{connection.vendor}-{safe}-{digest}"


def _write_private(path: Path, text: str) -> None:
    path.unlink(missing_ok=True)
    # Created 0600 from the start: the secret is never readable by others, not even briefly.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text + "\n")
