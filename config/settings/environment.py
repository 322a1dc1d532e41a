"""Where this process runs: the environment it reads, development or production, its secret key,
its hosts and its public address."""

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parents[2]

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# "development" runs on a fresh machine with nothing configured; "production" insists on secrets.
GATEWAY_ENV = env.str("GATEWAY_ENV", default="development")
if GATEWAY_ENV not in {"development", "production"}:
    raise ImproperlyConfigured(
        f"GATEWAY_ENV — development или production, а задано {GATEWAY_ENV!r}"
    )
PRODUCTION = GATEWAY_ENV == "production"

DEBUG = env.bool("DJANGO_DEBUG", default=False)
DEV_SECRET_KEY = "dev-only-insecure-secret-key-change-me"  # noqa: S105
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured(
            "при GATEWAY_ENV=production нужен DJANGO_SECRET_KEY (свой, длинный и случайный)"
        )
    SECRET_KEY = DEV_SECRET_KEY
if PRODUCTION:
    # A production process refuses to start rather than run with a debug page or a secret
    # everybody knows: confirmation tokens are HMACs of that secret.
    if DEBUG:
        raise ImproperlyConfigured(
            "при GATEWAY_ENV=production DJANGO_DEBUG должен быть выключен (false)"
        )
    if SECRET_KEY == DEV_SECRET_KEY or SECRET_KEY.startswith("django-insecure-"):
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY — общеизвестное значение по умолчанию: задайте свой"
        )

ALLOWED_HOSTS = env.list(
    "DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"]
)
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

# Local state of `make demo` (the demo key and admin password files), git-ignored.
GATEWAY_STATE_DIR = env.str("GATEWAY_STATE_DIR", default=str(BASE_DIR / "var"))

# The public address of this gateway: approval links and the sandbox base URL are built from it.
GATEWAY_SITE_URL = env.str(
    "GATEWAY_SITE_URL", default=f"http://127.0.0.1:{env.int('PORT', default=8000)}"
).rstrip("/")
