"""Django settings: every knob is an environment variable with a safe default (see .env.example)."""

import hashlib
import hmac
import ipaddress
import os
import re
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# "development" runs on a fresh machine with nothing configured; "production" insists on secrets.
GATEWAY_ENV = env.str("GATEWAY_ENV", default="development")
if GATEWAY_ENV not in {"development", "production"}:
    raise ImproperlyConfigured(f"GATEWAY_ENV must be development or production, got {GATEWAY_ENV!r}")
PRODUCTION = GATEWAY_ENV == "production"

DEBUG = env.bool("DJANGO_DEBUG", default=False)
DEV_SECRET_KEY = "dev-only-insecure-secret-key-change-me"  # noqa: S105
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY is required when GATEWAY_ENV=production")
    SECRET_KEY = DEV_SECRET_KEY
if PRODUCTION:
    # A production process refuses to start rather than run with a debug page or a secret
    # everybody knows: confirmation tokens are HMACs of that secret.
    if DEBUG:
        raise ImproperlyConfigured("DJANGO_DEBUG must be off when GATEWAY_ENV=production")
    if SECRET_KEY == DEV_SECRET_KEY or SECRET_KEY.startswith("django-insecure-"):
        raise ImproperlyConfigured("DJANGO_SECRET_KEY is a published default; set your own")
# The journal's hash chain is an HMAC-SHA256 keyed outside the database, so that whoever can
# write the database cannot recompute it: "kid1:secret1,kid2:secret2" (a kid is letters,
# digits, "._-"; the secret is everything after the first ":" and holds no comma). The first
# key signs new entries; every listed key still verifies the entries it signed (rotation:
# put the new key first, keep the old ones).
def _journal_keys(raw: str) -> dict[str, str]:
    keys: dict[str, str] = {}
    for number, item in enumerate((part.strip() for part in raw.split(",")), start=1):
        kid, sep, secret = item.partition(":")
        kid = kid.strip()
        # The message names the item by position: a malformed item may be a bare secret.
        if not sep or not re.fullmatch(r"[A-Za-z0-9._-]{1,32}", kid):
            raise ImproperlyConfigured(
                f"GATEWAY_JOURNAL_KEYS: item {number} is not kid:secret (each item is kid:secret, "
                "the kid 1-32 characters of letters, digits, '._-')")
        if kid in keys:
            raise ImproperlyConfigured(f"GATEWAY_JOURNAL_KEYS: key id {kid!r} appears twice")
        if len(secret) < 32:
            raise ImproperlyConfigured(
                f"GATEWAY_JOURNAL_KEYS: the secret of key id {kid!r} has {len(secret)} "
                "characters, at least 32 are needed")
        keys[kid] = secret
    return keys


_JOURNAL_KEYS_RAW = env.str("GATEWAY_JOURNAL_KEYS", default="")
if _JOURNAL_KEYS_RAW.strip():
    GATEWAY_JOURNAL_KEYS = _journal_keys(_JOURNAL_KEYS_RAW)
elif PRODUCTION:
    raise ImproperlyConfigured(
        "GATEWAY_JOURNAL_KEYS (kid:secret, see docs/production.md) is required when "
        "GATEWAY_ENV=production: the journal's HMAC key must not be derivable from the database")
else:
    # The embedded demo: a key derived from SECRET_KEY, so nothing needs configuring.
    GATEWAY_JOURNAL_KEYS = {
        "dev": hmac.new(SECRET_KEY.encode(), b"audit.journal-chain", hashlib.sha256).hexdigest()
    }
# Entries written before the chain was keyed carry no key id and a plain sha256 link. They are
# accepted only up to this id (outside the database, so a rewrite cannot widen it); 0 = none.
GATEWAY_JOURNAL_LEGACY_LAST_ID = env.int("GATEWAY_JOURNAL_LEGACY_LAST_ID", default=0)
# Parallel hash chains ("lanes") per contour on PostgreSQL: a writer takes a lane no one holds
# (SKIP LOCKED), so up to this many calls of one contour journal at once without waiting. As
# many as the calls one worker runs at once (GATEWAY_SYNC_THREADS): with 8, two workers under
# 32 clients had 0.17 sessions waiting on a head on average (benchmarks/README.md).
GATEWAY_JOURNAL_LANES = env.int("GATEWAY_JOURNAL_LANES", default=32)
# GigaChat's function block: its token budget, and characters per token as measured by
# `manage.py conformance gigachat` (the API's tokens/count); 3 over-counts on purpose.
GIGACHAT_FUNCTION_TOKEN_BUDGET = env.int("GIGACHAT_FUNCTION_TOKEN_BUDGET", default=3700)
GIGACHAT_CHARS_PER_TOKEN = env.float("GIGACHAT_CHARS_PER_TOKEN", default=3.0)
if not 1.0 <= GIGACHAT_CHARS_PER_TOKEN <= 8.0:
    raise ImproperlyConfigured("GIGACHAT_CHARS_PER_TOKEN must be between 1 and 8 "
                               f"(the measured characters per token), not {GIGACHAT_CHARS_PER_TOKEN}")
if not 100 <= GIGACHAT_FUNCTION_TOKEN_BUDGET <= 4096:
    raise ImproperlyConfigured("GIGACHAT_FUNCTION_TOKEN_BUDGET must be between 100 and 4096 "
                               f"(GigaChat's cap), not {GIGACHAT_FUNCTION_TOKEN_BUDGET}")

ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

# Local state of `make demo` (the demo key and admin password files), git-ignored.
GATEWAY_STATE_DIR = env.str("GATEWAY_STATE_DIR", default=str(BASE_DIR / "var"))

# The public address of this gateway: approval links and the sandbox base URL are built from it.
GATEWAY_SITE_URL = env.str(
    "GATEWAY_SITE_URL", default=f"http://127.0.0.1:{env.int('PORT', default=8000)}"
).rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from here, never a CDN
    # People's second factor (tools/factors): TOTP, backup codes, passkeys.
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
    "django_otp_webauthn",
    "audit",
    "tools",
    "adapters.invoicebox",
    "adapters.rest",
    "adapters.mcp",
    "adapters.functions",
    "adapters.text",
    "adapters.oauth",
    "conformance",
    "axes",
]

# Per-contour roles (tools/roles.py) are django-rules predicates; ModelBackend for the rest.
# django-axes first: a locked-out username or address gets no further (tools/logins.py).
AUTHENTICATION_BACKENDS = [
    "tools.logins.RequestOnlyAxesBackend",
    "rules.permissions.ObjectPermissionBackend",
    "django.contrib.auth.backends.ModelBackend",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A widening refused for want of a fresh second factor: to its check and back.
    "tools.factors.middleware.StepUpRefusals",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "tools.ops.logs.journaled_refusals_logged_once",
    # Answers a locked-out login with 429 (last, as django-axes requires).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
# Explicit transactions only: a failed call's journal entry must survive (STYLE.md, habit 4).
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# Sync work runs on a fixed pool of GATEWAY_SYNC_THREADS threads (config/asgi.py), so a kept
# connection is reused by the next request on its thread, and their number is bounded. SQLite
# keeps them by default (opening one costs more than the demo's whole read); PostgreSQL keeps
# none unless told (workers x threads connections), or takes them from a pool (DATABASE_POOL).
_IS_SQLITE = DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE",
                                               default=600 if _IS_SQLITE else 0)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env.bool(
        "DATABASE_POOL", default=False):
    # A pool per process hands a connection over per request (a new PostgreSQL connection
    # costs ~3 ms). Django refuses a pool together with CONN_MAX_AGE.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 2, "max_size": env.int("DATABASE_POOL_MAX_SIZE", default=20), "timeout": 10}
if _IS_SQLITE:
    # Several workers share one SQLite file: wait for the write lock instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE",
         # WAL: readers never wait for the writer; NORMAL: no fsync per commit (a power cut
         # may lose the last commits, never corrupt the file): the demo's database, not prod.
         "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"}
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Where /accounts/login/ goes without ?next=: the home page, which lists where each role works.
LOGIN_REDIRECT_URL = "home"

# Failed logins (django-axes, tools/logins.py): after AXES_FAILURE_LIMIT failures for one
# username, or from one address, both stay refused (the right password too) for the cool-off.
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("AXES_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "tools.logins.client_address"
AXES_COOLOFF_MESSAGE = ("Слишком много неудачных попыток входа: вход для этого имени или адреса "
                        "закрыт на время. Попробуйте позже.")

LANGUAGE_CODE = env.str("DJANGO_LANGUAGE_CODE", default="ru")
TIME_ZONE = env.str("DJANGO_TIME_ZONE", default="Europe/Moscow")
USE_I18N = True
# The project's Russian catalog (plural forms, admin messages): read before Django's own.
LOCALE_PATHS = [BASE_DIR / "locale"]
# Formats Django's Russian locale gets wrong (config/formats/ru); the rest stay Django's.
FORMAT_MODULE_PATH = ["config.formats"]
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_RENDERER_CLASSES": ["adapters.rest.renderers.SafeJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["adapters.rest.parsers.StrictJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "adapters.rest.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    # `?format=` names a tool format (API.md), not a DRF renderer.
    "URL_FORMAT_OVERRIDE": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Шлюз Инвойсбокс для ИИ-ассистентов — API",
    "DESCRIPTION": "Шлюз между ИИ-ассистентами и API Инвойсбокс: один каталог инструментов, одно ядро.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"persistAuthorization": True, "displayRequestDuration": True},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "adapters.rest.openapi.add_journal_and_schemes",
    ],
}

# Celery: eager by default so a fresh machine needs no broker; production needs Redis.
# memory:// with a host: without one kombu warns "No hostname was supplied" on every connection.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="memory://localhost/")
if CELERY_BROKER_URL == "memory://":
    CELERY_BROKER_URL = "memory://localhost/"
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=not PRODUCTION)
if PRODUCTION and not CELERY_TASK_ALWAYS_EAGER and CELERY_BROKER_URL.startswith("memory"):
    raise ImproperlyConfigured("CELERY_BROKER_URL (redis://...) is required in production")
CELERY_TASK_EAGER_PROPAGATES = True
# Every task is idempotent and takes ids: a worker killed mid-task hands the message back.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Redis hands an unacknowledged message (its worker died) to another worker after this long.
# It fits the longest task: a read of 30 s, retried, well under 2 minutes; task retries wait
# at most half of it (tools/tasks.py), and the outbox sweep re-sends what was lost anyway.
CELERY_VISIBILITY_TIMEOUT_SECONDS = env.int("CELERY_VISIBILITY_TIMEOUT_SECONDS", default=300)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT_SECONDS}
CELERY_TASK_IGNORE_RESULT = True
# One queue name per deployment (or per test run) sharing a Redis.
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_TASK_DEFAULT_QUEUE", default="gateway")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = TIME_ZONE
# `celery -A config beat` runs these; the schedule is static, no database scheduler needed.
CELERY_BEAT_SCHEDULE = {
    "expire-confirmations": {
        "task": "tools.tasks.expire_confirmations",
        "schedule": env.float("GATEWAY_EXPIRE_EVERY_SECONDS", default=60.0),
    },
    "refresh-open-orders": {
        "task": "tools.tasks.refresh_open_orders",
        "schedule": env.float("GATEWAY_REFRESH_EVERY_SECONDS", default=300.0),
    },
    "journal-checkpoint": {
        "task": "audit.tasks.write_journal_checkpoint",
        "schedule": env.float("GATEWAY_JOURNAL_CHECKPOINT_EVERY_SECONDS", default=3600.0),
    },
    "operator-alerts": {  # reminders before the approval deadline, and due retries
        "task": "tools.alerts.sweep_alerts",
        "schedule": env.float("GATEWAY_ALERTS_EVERY_SECONDS", default=60.0),
    },
    "outbox": {  # tasks recorded with their cause and never reported done (tools/outbox.py)
        "task": "tools.outbox.sweep_outbox",
        "schedule": env.float("GATEWAY_OUTBOX_EVERY_SECONDS", default=30.0),
    },
    "recover-operations": {  # executions left in flight or unknown, resolved by lookup
        "task": "tools.recovery.resolve_operations",
        "schedule": env.float("GATEWAY_RECOVERY_EVERY_SECONDS", default=30.0),
    },
    "journal-spool": {  # entries written while the database was away (audit/spool.py)
        "task": "audit.tasks.drain_journal_spool",
        "schedule": env.float("GATEWAY_SPOOL_EVERY_SECONDS", default=30.0),
    },
}
# An outbox task not reported done this long after it was sent is sent again (doubling).
GATEWAY_OUTBOX_LEASE_SECONDS = env.float("GATEWAY_OUTBOX_LEASE_SECONDS", default=60.0)
# At most this many unresolved operations are looked up per recovery run (tools/recovery.py).
GATEWAY_RECOVERY_BATCH = env.int("GATEWAY_RECOVERY_BATCH", default=50)
# Where the beat task writes journal checkpoints, one new file each time (never overwritten).
# Ship them off this host (docs/production.md): a checkpoint is only an anchor where the
# database's writer cannot reach it.
GATEWAY_JOURNAL_CHECKPOINT_DIR = env.str(
    "GATEWAY_JOURNAL_CHECKPOINT_DIR", default=str(Path(GATEWAY_STATE_DIR) / "journal-checkpoints")
)
# Open orders older than this are no longer refreshed (their payment page expired long ago).
GATEWAY_REFRESH_MAX_AGE_DAYS = env.int("GATEWAY_REFRESH_MAX_AGE_DAYS", default=30)
# An execution still in flight after this long has lost its worker: the next call with the
# same token recovers it by lookup (tools/gateway.py).
GATEWAY_STALE_IN_FLIGHT_SECONDS = env.float("GATEWAY_STALE_IN_FLIGHT_SECONDS", default=60.0)

# Invoicebox upstream.
# Stored Invoicebox tokens and notification keys are Fernet-encrypted with these keys
# (comma-separated, the first encrypts; see `manage.py rotate_secrets_key`).
GATEWAY_SECRETS_KEYS = env.list("GATEWAY_SECRETS_KEY", default=[])
if not GATEWAY_SECRETS_KEYS:
    if GATEWAY_ENV == "production":
        raise ImproperlyConfigured(
            "GATEWAY_SECRETS_KEY is required when GATEWAY_ENV=production "
            "(generate one: python -c 'from cryptography.fernet import Fernet; "
            "print(Fernet.generate_key().decode())')")
    import base64 as _base64
    import hashlib as _hashlib

    GATEWAY_SECRETS_KEYS = [_base64.urlsafe_b64encode(
        _hashlib.sha256(b"gateway-secrets:" + SECRET_KEY.encode()).digest()).decode()]

INVOICEBOX_USER_AGENT = env.str(
    "INVOICEBOX_USER_AGENT", default="InvoiceboxAssistantGateway/0.1 (Django)"
)
INVOICEBOX_TIMEOUT_SECONDS = env.float("INVOICEBOX_TIMEOUT_SECONDS", default=30.0)
# Calls to this project's own sandbox go through an in-process transport, so a sync view under
# ASGI (one thread) never waits on a second request that needs that same thread.
INVOICEBOX_SANDBOX_IN_PROCESS = env.bool("INVOICEBOX_SANDBOX_IN_PROCESS", default=True)
# The bundled sandbox answers only what the docs promise (no shipment status/final/sums, no
# availableAmount on refundable items): the client's fallbacks for the real API's answers.
INVOICEBOX_SANDBOX_DOCUMENTED_ONLY = env.bool("INVOICEBOX_SANDBOX_DOCUMENTED_ONLY",
                                              default=False)
# Which paging names the sandbox reads: both (default), docs (page/pageSize), vendor
# (_page/_pageSize) or none (its first page at 30 rows, whatever is asked).
INVOICEBOX_SANDBOX_PAGING = env.str("INVOICEBOX_SANDBOX_PAGING", default="both")
INVOICEBOX_SANDBOX_BASE_URL = env.str(
    "INVOICEBOX_SANDBOX_BASE_URL", default=f"{GATEWAY_SITE_URL}/sandbox/invoicebox"
).rstrip("/")
# The sandbox signs its payment notifications with this key; sandbox contours get the same one.
INVOICEBOX_SANDBOX_NOTIFICATION_KEY = env.str(
    "INVOICEBOX_SANDBOX_NOTIFICATION_KEY", default="sandbox-notification-key"
)

# Gateway policy defaults (a contour may override its own).
GATEWAY_CONFIRMATION_TTL_SECONDS = env.int("GATEWAY_CONFIRMATION_TTL_SECONDS", default=15 * 60)
GATEWAY_DEDUP_WINDOW_SECONDS = env.int("GATEWAY_DEDUP_WINDOW_SECONDS", default=10 * 60)
# How long a write waiting for an operator stays open: people need hours, not the minutes a
# chat confirmation gets.
GATEWAY_APPROVAL_WINDOW_HOURS = env.int("GATEWAY_APPROVAL_WINDOW_HOURS", default=24)
# Threads per process for all sync work: Django's requests and the MCP core calls; each may
# wait on Invoicebox, and each keeps its own database connection.
GATEWAY_SYNC_THREADS = env.int("GATEWAY_SYNC_THREADS", default=32)
# Writes above this many kopecks (100 000,00 ₽) wait for an operator; refunds always do.
# GATEWAY_APPROVAL_THRESHOLD_RUB was the old, misleading name (it was kopecks all along): still
# read, with a warning from `manage.py check` (tools.apps), when the new name is not set.
GATEWAY_DEPRECATED_SETTINGS = [
    name for name in ("GATEWAY_APPROVAL_THRESHOLD_RUB",)
    if name in os.environ and "GATEWAY_APPROVAL_THRESHOLD_KOPECKS" not in os.environ
]
GATEWAY_APPROVAL_THRESHOLD_KOPECKS = env.int(
    "GATEWAY_APPROVAL_THRESHOLD_KOPECKS",
    default=env.int("GATEWAY_APPROVAL_THRESHOLD_RUB", default=10_000_000),
)

# Operators are told of writes waiting for them (tools/alerts.py): email through Django's
# backends (console in the demo, SMTP in production), an optional signed webhook per contour.
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default=(
    "django.core.mail.backends.smtp.EmailBackend" if PRODUCTION
    else "django.core.mail.backends.console.EmailBackend"))
# The console backend prints every alert to the process log, the file backend to disk: a
# production process refuses both rather than keep mail outside the mail system.
LOG_EMAIL_BACKENDS = ("django.core.mail.backends.console.EmailBackend",
                      "django.core.mail.backends.filebased.EmailBackend")
if PRODUCTION and EMAIL_BACKEND in LOG_EMAIL_BACKENDS:
    raise ImproperlyConfigured(
        f"EMAIL_BACKEND={EMAIL_BACKEND} writes operators' mail to logs or files: not allowed "
        "when GATEWAY_ENV=production (use django.core.mail.backends.smtp.EmailBackend)")
EMAIL_HOST = env.str("EMAIL_HOST", default="localhost")
EMAIL_PORT = env.int("EMAIL_PORT", default=25)
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=10)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="gateway@localhost")
# A reminder goes out this long before the approval deadline; attempts per alert, and the
# webhook's timeout.
GATEWAY_ALERT_REMINDER_SECONDS = env.int("GATEWAY_ALERT_REMINDER_SECONDS", default=5 * 60)
GATEWAY_ALERT_MAX_ATTEMPTS = env.int("GATEWAY_ALERT_MAX_ATTEMPTS", default=6)
GATEWAY_ALERT_TIMEOUT_SECONDS = env.float("GATEWAY_ALERT_TIMEOUT_SECONDS", default=5.0)

# MCP Streamable HTTP at /mcp: Host and Origin allowlists against DNS rebinding ("host:*" = any
# port). Loopback only by default; behind a real hostname list it here, or clients get 421.
MCP_ALLOWED_HOSTS = env.list("MCP_ALLOWED_HOSTS", default=[
    "127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"])
MCP_ALLOWED_ORIGINS = env.list("MCP_ALLOWED_ORIGINS", default=[
    "http://127.0.0.1", "http://127.0.0.1:*", "http://localhost", "http://localhost:*",
    "http://[::1]", "http://[::1]:*"])

# MCP sessions (2025-11-25 clients) live in the database, so any worker of any host answers them
# (adapters/mcp/sessions.py). Idle ones expire; past the cap the oldest idle one is closed.
MCP_SESSION_IDLE_SECONDS = env.int("MCP_SESSION_IDLE_SECONDS", default=30 * 60)
MCP_MAX_SESSIONS = env.int("MCP_MAX_SESSIONS", default=200)
# Where a form-dialog answer that reached another worker is passed to the one waiting for it
# (Redis pub/sub). Empty: the Celery broker when it is Redis, else none (one worker only: an
# answer on another worker is not heard, and the write falls back to the chat confirmation).
MCP_REDIS_URL = env.str("MCP_REDIS_URL", default="") or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else "")
# How long a tools/call waits for the person's answer in the dialog before it returns the
# chat confirmation (the two calls with the token) instead.
MCP_ELICITATION_TIMEOUT_SECONDS = env.float("MCP_ELICITATION_TIMEOUT_SECONDS", default=300.0)
for _name in ("MCP_SESSION_IDLE_SECONDS", "MCP_MAX_SESSIONS", "MCP_ELICITATION_TIMEOUT_SECONDS"):
    if globals()[_name] <= 0:
        raise ImproperlyConfigured(f"{_name} must be positive")
# The gateway as an OAuth 2.1 authorization server for /mcp (adapters/oauth): hosted assistants
# register themselves and an owner consents. Its issuer is GATEWAY_SITE_URL (https, or loopback
# http); access tokens live an hour, a grant (its key, every refresh) GATEWAY_OAUTH_GRANT_DAYS.
GATEWAY_OAUTH_ENABLED = env.bool("GATEWAY_OAUTH_ENABLED", default=True)
GATEWAY_OAUTH_ACCESS_SECONDS = env.int("GATEWAY_OAUTH_ACCESS_SECONDS", default=3600)
GATEWAY_OAUTH_GRANT_DAYS = env.int("GATEWAY_OAUTH_GRANT_DAYS", default=90)

# One JSON object per line on stderr (tools.ops.logs), one line per tool call with its journal
# id; LOG_FORMAT=text for a human at a terminal.
LOG_FORMAT = env.str("LOG_FORMAT", default="json")
if LOG_FORMAT not in {"json", "text"}:
    raise ImproperlyConfigured(f"LOG_FORMAT must be json or text, got {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {"()": "tools.ops.logs.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # axes: lockouts stay (WARNING); each failure is journaled (tools/logins.py) already.
    "loggers": {"httpx": {"level": "WARNING"}, "httpcore": {"level": "WARNING"},
                "axes": {"level": "WARNING"}},
}

# Operations (tools/ops): /health is public; /metrics needs the Bearer token or a peer address
# in the allow-list (REMOTE_ADDR; networks allowed). REMOTE_ADDR is what the ASGI server says:
# uvicorn rewrites it from X-Forwarded-For sent by FORWARDED_ALLOW_IPS (127.0.0.1 unless set),
# and behind a same-host proxy that sets no X-Forwarded-For every client is 127.0.0.1. So
# production trusts addresses only when told both (docs/production.md): by default the token
# alone opens /metrics there; loopback is trusted by default only in development.
HEALTH_CHECK_TIMEOUT_SECONDS = env.float("HEALTH_CHECK_TIMEOUT_SECONDS", default=2.0)
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_ALLOWED_IPS = env.list("METRICS_ALLOWED_IPS",
                               default=[] if PRODUCTION else ["127.0.0.1", "::1"])
if PRODUCTION and METRICS_ALLOWED_IPS and "FORWARDED_ALLOW_IPS" not in os.environ:
    raise ImproperlyConfigured(
        "METRICS_ALLOWED_IPS trusts peer addresses, which uvicorn takes from X-Forwarded-For of "
        "FORWARDED_ALLOW_IPS: set FORWARDED_ALLOW_IPS too (your proxy's address) when "
        "GATEWAY_ENV=production, or leave METRICS_ALLOWED_IPS empty and use METRICS_TOKEN")
for _network in METRICS_ALLOWED_IPS:
    try:
        ipaddress.ip_network(_network, strict=False)
    except ValueError:
        raise ImproperlyConfigured(f"METRICS_ALLOWED_IPS: {_network!r} is no address or network"
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
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS",
                                              default=False)
    SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=False)

# People's second factor (tools/factors). Step-up: deciding a confirmation and widening what
# assistants may do needs a factor checked within GATEWAY_STEP_UP_SECONDS. Required on every
# contour in production (and a production process refuses to start without it); the demo
# requires it only on contours whose owner turned it on (a contour may be stricter, never looser).
GATEWAY_REQUIRE_SECOND_FACTOR = env.bool("GATEWAY_REQUIRE_SECOND_FACTOR", default=PRODUCTION)
if PRODUCTION and not GATEWAY_REQUIRE_SECOND_FACTOR:
    raise ImproperlyConfigured("GATEWAY_REQUIRE_SECOND_FACTOR cannot be off when "
                               "GATEWAY_ENV=production: no money leaves on a password alone")
GATEWAY_STEP_UP_SECONDS = env.int("GATEWAY_STEP_UP_SECONDS", default=300)
if not 1 <= GATEWAY_STEP_UP_SECONDS <= 3600:
    raise ImproperlyConfigured("GATEWAY_STEP_UP_SECONDS must be between 1 and 3600, "
                               f"not {GATEWAY_STEP_UP_SECONDS}")
OTP_TOTP_ISSUER = env.str("GATEWAY_TOTP_ISSUER", default="Шлюз Инвойсбокс")
# Passkeys: the relying party is the site's host name (an IP address cannot be one: then
# "localhost", which browsers treat as secure over plain http). Passwordless login stays off:
# a passkey is the second factor, never a replacement for the password.
def _webauthn_party(site_url: str) -> tuple[str, list[str]]:
    from urllib.parse import urlsplit

    parts = urlsplit(site_url)
    host = parts.hostname or "localhost"
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return host, [f"{parts.scheme}://{parts.netloc}"]
    port = f":{parts.port}" if parts.port else ""
    return "localhost", [f"http://localhost{port}"]


_RP_ID, _RP_ORIGINS = _webauthn_party(GATEWAY_SITE_URL)
OTP_WEBAUTHN_RP_ID = env.str("GATEWAY_WEBAUTHN_RP_ID", default=_RP_ID)
OTP_WEBAUTHN_RP_NAME = env.str("GATEWAY_WEBAUTHN_RP_NAME", default="Шлюз Инвойсбокс")
OTP_WEBAUTHN_ALLOWED_ORIGINS = env.list("GATEWAY_WEBAUTHN_ORIGINS", default=_RP_ORIGINS)
OTP_WEBAUTHN_ALLOW_PASSWORDLESS_LOGIN = False

# Reads are retried on 408/425/429/503 and network errors; writes never (see client.py).
INVOICEBOX_READ_ATTEMPTS = env.int("INVOICEBOX_READ_ATTEMPTS", default=3)
INVOICEBOX_BACKOFF_SECONDS = env.float("INVOICEBOX_BACKOFF_SECONDS", default=1.0)
# Extra sandbox accounts as "token:merchant-uuid" (the demo token always works).
INVOICEBOX_SANDBOX_TOKENS = env.list("INVOICEBOX_SANDBOX_TOKENS", default=[])
# Shared upstream budget per Invoicebox account ("requests/seconds"; the API allows 100/30),
# and the circuit breaker: open after N consecutive server faults, for S seconds.
INVOICEBOX_RATE_LIMIT = env.str("INVOICEBOX_RATE_LIMIT", default="100/30")
INVOICEBOX_BREAKER_FAILURES = env.int("INVOICEBOX_BREAKER_FAILURES", default=5)
INVOICEBOX_BREAKER_OPEN_SECONDS = env.int("INVOICEBOX_BREAKER_OPEN_SECONDS", default=30)
