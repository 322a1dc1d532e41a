"""Creating contours and their keys: the service behind the management commands and the admin."""

from __future__ import annotations

import re
import secrets
import uuid
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from audit.cli import record_configure
from tools.models import (
    OFFICIAL_API_ORIGIN,
    ApiKey,
    ApiPrefix,
    Contour,
    InvoiceboxMode,
    Toolset,
    api_prefix_problem,
    base_url_problem,
)

# The public demo shop of Invoicebox (reference/invoicebox-api.md §1): shared, no real money.
DEMO_TOKEN = "b37c4c689295904ed21eee5d9a48d42e"  # noqa: S105 - published by Invoicebox
DEMO_MERCHANT_ID = "ffffffff-ffff-ffff-ffff-ffffffffffff"
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)


class ContourSetupError(ValueError):
    """A contour can't be created as asked; the message says why."""


def default_base_url(mode: str) -> str:
    if mode == InvoiceboxMode.SANDBOX:
        return settings.INVOICEBOX_SANDBOX_BASE_URL
    return OFFICIAL_API_ORIGIN


def parse_toolsets(raw: str) -> list[str]:
    toolsets = [part.strip() for part in raw.split(",") if part.strip()]
    unknown = sorted(set(toolsets) - set(Toolset.values))
    if unknown:
        raise ContourSetupError(
            f"unknown toolsets {', '.join(unknown)}; known: {', '.join(Toolset.values)}"
        )
    if Toolset.READ not in toolsets:
        toolsets.insert(0, Toolset.READ)
    return list(dict.fromkeys(toolsets))


@transaction.atomic
def create_contour(
    slug: str,
    *,
    mode: str,
    name: str = "",
    toolsets: list[str] | None = None,
    base_url: str = "",
    token: str = "",
    merchant_id: str = "",
    own_sandbox_merchant: bool = False,
    api_prefix: str = ApiPrefix.V3,
) -> Contour:
    """`own_sandbox_merchant`: a sandbox contour without a token gets a fresh sandbox merchant
    and token of its own, so it never reads another contour's orders (the default shared demo
    shop is what the seeded `demo` contour and the published demo token use)."""
    if mode not in InvoiceboxMode.values:
        raise ContourSetupError(f"mode must be one of {', '.join(InvoiceboxMode.values)}")
    if Contour.objects.filter(slug=slug).exists():
        raise ContourSetupError(f"contour {slug!r} already exists")
    if mode == InvoiceboxMode.PRODUCTION and not (token and merchant_id):
        raise ContourSetupError("production needs --token-file and --merchant-id")
    if merchant_id and not token:
        raise ContourSetupError("--merchant-id needs the token of that merchant (--token-file)")
    if merchant_id and not UUID_RE.match(merchant_id):
        raise ContourSetupError("--merchant-id must be a UUID")
    if mode == InvoiceboxMode.CUSTOM and not base_url:
        raise ContourSetupError("mode custom needs --base-url (a proxy or a test double)")
    url = (base_url or default_base_url(mode)).rstrip("/")
    problem = base_url_problem(mode, url)
    if problem:
        raise ContourSetupError(f"--base-url: {problem}")
    problem = api_prefix_problem(api_prefix)
    if problem:
        raise ContourSetupError(f"--api-prefix: {problem}")
    if mode == InvoiceboxMode.SANDBOX and own_sandbox_merchant and not token:
        token, merchant_id = f"sbx_{secrets.token_hex(16)}", str(uuid.uuid4())
    own_token = bool(token)
    try:
        contour = Contour.objects.create(
            slug=slug,
            name=name or slug,
            mode=mode,
            base_url=url,
            api_prefix=api_prefix,
            api_token=token or DEMO_TOKEN,
            merchant_id=merchant_id or DEMO_MERCHANT_ID,
            toolsets=toolsets or [Toolset.READ],
        )
    except ValidationError as error:
        raise ContourSetupError("; ".join(error.messages)) from None
    if mode == InvoiceboxMode.SANDBOX:
        connect_sandbox_notifications(contour, own_account=own_token)
    return contour


SITE_URL_FILE = "site-url"


def remember_site_url(state_dir: str | Path) -> None:
    """Written by `make demo` (seed_demo): where the server it starts will listen."""
    path = Path(state_dir)
    path.mkdir(parents=True, exist_ok=True)
    (path / SITE_URL_FILE).write_text(settings.GATEWAY_SITE_URL + "\n")


def running_site_url(state_dir: str | Path, environ: dict[str, str]) -> str:
    """The gateway's own URL as a later command should print it: the environment when it says
    (PORT, GATEWAY_SITE_URL), else what `make demo` last served on, else the settings."""
    if "GATEWAY_SITE_URL" in environ or "PORT" in environ:
        return settings.GATEWAY_SITE_URL
    try:
        remembered = (Path(state_dir) / SITE_URL_FILE).read_text().strip()
    except OSError:
        remembered = ""
    return remembered.rstrip("/") or settings.GATEWAY_SITE_URL


def notification_url(contour: Contour) -> str:
    """Where Invoicebox should send this contour's payment notifications."""
    return f"{settings.GATEWAY_SITE_URL}/invoicebox/notifications/{contour.slug}"


def connect_sandbox_notifications(contour: Contour, *, own_account: bool,
                                  claim_shared: bool = False) -> None:
    """A sandbox contour signs like its sandbox shop and is that shop's notification URL.

    A contour with its own sandbox token has its own shop. The shared demo shop keeps the URL
    of the first contour that claimed it (the seeded `demo`), so a later contour on the demo
    token never silently steals another's notifications; `claim_shared` takes it anyway
    (seed_demo does, so the demo contour follows a changed GATEWAY_SITE_URL).
    """
    from adapters.invoicebox.sandbox import (
        configure_notifications,
        notification_url_of,
        register_account,
    )

    if not contour.notification_key:
        contour.notification_key = settings.INVOICEBOX_SANDBOX_NOTIFICATION_KEY
        contour.save(update_fields=["notification_key"])
    if own_account:
        register_account(contour.api_token, contour.merchant_id,
                         notification_url=notification_url(contour))
    elif claim_shared or not notification_url_of(contour.api_token):
        configure_notifications(contour.api_token, notification_url(contour))


def issue_key(contour: Contour, label: str = "") -> str:
    _, raw = ApiKey.issue(contour, label=label)
    return raw


def journal_contour_created(contour: Contour) -> None:
    """A contour made from the command line, journaled as the admin journals its own."""
    state = {"mode": contour.mode, "base_url": contour.base_url, "api_prefix": contour.api_prefix,
             "merchant_id": contour.merchant_id, "toolsets": list(contour.toolsets)}
    record_configure(
        contour=contour.slug, code="contour_created",
        message=f"контур {contour.slug} создан: наборы {', '.join(contour.toolsets)}",
        arguments={"object": "contour", "action": "created",
                   "changes": {key: {"before": None, "after": value}
                               for key, value in state.items()}},
        secrets=[contour.api_token, contour.notification_key],
    )


def journal_key_issued(key: ApiKey) -> None:
    record_configure(
        contour=key.contour.slug, code="api_key_issued",
        message=f"выдан ключ {key.prefix}… для контура {key.contour.slug}",
        arguments={"object": "api_key", "prefix": key.prefix, "label": key.label,
                   "holder": key.user.get_username() if key.user else ""},
        secrets=[key.contour.api_token, key.contour.notification_key],
    )
