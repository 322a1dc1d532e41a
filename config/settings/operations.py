"""Running it: logs, health, metrics, Sentry, and the HTTPS settings of production."""

import ipaddress
import os

from django.core.exceptions import ImproperlyConfigured

from config.settings.environment import GATEWAY_ENV, PRODUCTION, env

# One JSON object per line on stderr (tools.ops.logs), one line per tool call with its journal
# id; LOG_FORMAT=text for a human at a terminal.
LOG_FORMAT = env.str("LOG_FORMAT", default="json")
if LOG_FORMAT not in {"json", "text"}:
    raise ImproperlyConfigured(f"LOG_FORMAT — json или text, а задано {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {"()": "tools.ops.logs.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # axes: lockouts stay (WARNING); each failure is journaled (tools/people/logins.py) already.
    "loggers": {
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        "axes": {"level": "WARNING"},
    },
}

# Operations (tools/ops): /health is public; /metrics needs the Bearer token or a peer address
# in the allow-list (REMOTE_ADDR; networks allowed). REMOTE_ADDR is what the ASGI server says:
# uvicorn rewrites it from X-Forwarded-For sent by FORWARDED_ALLOW_IPS (127.0.0.1 unless set),
# and behind a same-host proxy that sets no X-Forwarded-For every client is 127.0.0.1. So
# production trusts addresses only when told both (docs/production.md): by default the token
# alone opens /metrics there; loopback is trusted by default only in development.
HEALTH_CHECK_TIMEOUT_SECONDS = env.float("HEALTH_CHECK_TIMEOUT_SECONDS", default=2.0)
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_ALLOWED_IPS = env.list(
    "METRICS_ALLOWED_IPS", default=[] if PRODUCTION else ["127.0.0.1", "::1"]
)
if PRODUCTION and METRICS_ALLOWED_IPS and "FORWARDED_ALLOW_IPS" not in os.environ:
    raise ImproperlyConfigured(
        "METRICS_ALLOWED_IPS доверяет адресам клиентов, а uvicorn берёт их из X-Forwarded-For "
        "прокси из FORWARDED_ALLOW_IPS: при GATEWAY_ENV=production задайте и FORWARDED_ALLOW_IPS "
        "(адрес вашего прокси) или оставьте METRICS_ALLOWED_IPS пустым и используйте METRICS_TOKEN"
    )
for _network in METRICS_ALLOWED_IPS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"METRICS_ALLOWED_IPS: {_network!r} — не адрес и не сеть"
        ) from None
# Several worker processes: a directory they all write their metric samples to (wipe it when
# the service starts). prometheus-client reads this same variable.
METRICS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default="")
# Optional Sentry: upstream failures and unknown outcomes, never argument values.
SENTRY_DSN = env.str("SENTRY_DSN", default="")
SENTRY_ENVIRONMENT = env.str("SENTRY_ENVIRONMENT", default=GATEWAY_ENV)
if SENTRY_DSN:
    from tools.ops import sentry as _sentry

    _sentry.init(SENTRY_DSN, environment=SENTRY_ENVIRONMENT)

if PRODUCTION:
    SESSION_COOKIE_SECURE = env.bool("DJANGO_SESSION_COOKIE_SECURE", default=True)
    CSRF_COOKIE_SECURE = env.bool("DJANGO_CSRF_COOKIE_SECURE", default=True)
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
    # Behind a TLS-terminating proxy that sets X-Forwarded-Proto (docs/production.md).
    if env.bool("DJANGO_BEHIND_TLS_PROXY", default=False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=False)
    # A scraper inside the network asks /metrics over plain HTTP, not through the TLS proxy.
    SECURE_REDIRECT_EXEMPT = [r"^metrics$"]
    SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=0)
    # Decisions for the whole domain, not for this service alone: opt-in (docs/production.md).
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool(
        "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False
    )
    SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=False)
