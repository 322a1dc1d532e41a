"""The assistants' protocols: MCP (hosts, sessions, dialogs), its OAuth server, GigaChat's
function budget."""

from django.core.exceptions import ImproperlyConfigured

from config.settings.environment import env
from config.settings.tasks import CELERY_BROKER_URL

# MCP Streamable HTTP at /mcp: Host and Origin allowlists against DNS rebinding ("host:*" = any
# port). Loopback only by default; behind a real hostname list it here, or clients get 421.
MCP_ALLOWED_HOSTS = env.list(
    "MCP_ALLOWED_HOSTS",
    default=["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"],
)
MCP_ALLOWED_ORIGINS = env.list(
    "MCP_ALLOWED_ORIGINS",
    default=[
        "http://127.0.0.1",
        "http://127.0.0.1:*",
        "http://localhost",
        "http://localhost:*",
        "http://[::1]",
        "http://[::1]:*",
    ],
)

# MCP sessions (2025-11-25 clients) live in the database, so any worker of any host answers them
# (adapters/mcp/sessions.py). Idle ones expire; one that made no call after initialize expires
# sooner. Caps per key, per contour and for the deployment: at a cap only the opening key's own
# least recently used session, unused for MCP_SESSION_PROTECT_SECONDS, makes room; else the
# new session is refused (HTTP 429 too_many_sessions). Expired rows go in the beat's batches.
MCP_SESSION_IDLE_SECONDS = env.int("MCP_SESSION_IDLE_SECONDS", default=30 * 60)
MCP_SESSION_UNUSED_SECONDS = env.int("MCP_SESSION_UNUSED_SECONDS", default=60)
MCP_SESSION_PROTECT_SECONDS = env.int("MCP_SESSION_PROTECT_SECONDS", default=5 * 60)
MCP_MAX_SESSIONS = env.int("MCP_MAX_SESSIONS", default=200)
MCP_MAX_SESSIONS_PER_KEY = env.int("MCP_MAX_SESSIONS_PER_KEY", default=20)
MCP_MAX_SESSIONS_PER_CONTOUR = env.int("MCP_MAX_SESSIONS_PER_CONTOUR", default=100)
MCP_SESSION_EXPIRE_BATCH = env.int("MCP_SESSION_EXPIRE_BATCH", default=1000)
# Where a form-dialog answer that reached another worker is passed to the one waiting for it
# (adapters/mcp/relay.py): Redis pub/sub here; empty: the Celery broker when it is Redis, else
# PostgreSQL's LISTEN/NOTIFY when the database is PostgreSQL, else none.
MCP_REDIS_URL = env.str("MCP_REDIS_URL", default="") or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else ""
)
# How many worker processes this one's sessions may be served by, from the server's own
# WEB_CONCURRENCY (uvicorn's and gunicorn's; `make demo` sets it from WORKERS). With more than
# one and no relay (SQLite, no Redis) the form dialog is not offered: the write answers with
# the chat confirmation at once instead of waiting for an answer another worker got.
MCP_WORKERS = env.int("WEB_CONCURRENCY", default=1)
# How long a tools/call waits for the person's answer in the dialog before it returns the
# chat confirmation (the two calls with the token) instead.
MCP_ELICITATION_TIMEOUT_SECONDS = env.float("MCP_ELICITATION_TIMEOUT_SECONDS", default=300.0)
for _name in (
    "MCP_SESSION_IDLE_SECONDS",
    "MCP_SESSION_UNUSED_SECONDS",
    "MCP_SESSION_PROTECT_SECONDS",
    "MCP_MAX_SESSIONS",
    "MCP_MAX_SESSIONS_PER_KEY",
    "MCP_MAX_SESSIONS_PER_CONTOUR",
    "MCP_SESSION_EXPIRE_BATCH",
    "MCP_ELICITATION_TIMEOUT_SECONDS",
):
    if globals()[_name] <= 0:
        raise ImproperlyConfigured(f"{_name} должен быть больше нуля")
# A tools/call of a session without a dialog answered in one thread hop without the SDK's
# request kernel (adapters/mcp/lean.py, the only shortcut); off: the SDK's own transport.
MCP_LEAN = env.bool("MCP_LEAN", default=True)
# The gateway as an OAuth 2.1 authorization server for /mcp (adapters/oauth): hosted assistants
# register themselves and an owner consents. Its issuer is GATEWAY_SITE_URL (https, or loopback
# http); access tokens live an hour, a grant (its key, every refresh) GATEWAY_OAUTH_GRANT_DAYS.
GATEWAY_OAUTH_ENABLED = env.bool("GATEWAY_OAUTH_ENABLED", default=True)
GATEWAY_OAUTH_ACCESS_SECONDS = env.int("GATEWAY_OAUTH_ACCESS_SECONDS", default=3600)
GATEWAY_OAUTH_GRANT_DAYS = env.int("GATEWAY_OAUTH_GRANT_DAYS", default=90)
# Dynamic client registration is anonymous (RFC 7591), so it is bounded
# (adapters/oauth/registration.py): the metadata's size, registrations per address per hour,
# registered clients in all; a client no owner consented to within the hours below is deleted.
GATEWAY_OAUTH_REGISTRATION_MAX_BYTES = env.int(
    "GATEWAY_OAUTH_REGISTRATION_MAX_BYTES", default=16 * 1024
)
GATEWAY_OAUTH_REGISTRATIONS_PER_ADDRESS_HOUR = env.int(
    "GATEWAY_OAUTH_REGISTRATIONS_PER_ADDRESS_HOUR", default=10
)
GATEWAY_OAUTH_MAX_CLIENTS = env.int("GATEWAY_OAUTH_MAX_CLIENTS", default=1000)
GATEWAY_OAUTH_UNUSED_CLIENT_HOURS = env.int("GATEWAY_OAUTH_UNUSED_CLIENT_HOURS", default=24)
for _name in (
    "GATEWAY_OAUTH_REGISTRATION_MAX_BYTES",
    "GATEWAY_OAUTH_REGISTRATIONS_PER_ADDRESS_HOUR",
    "GATEWAY_OAUTH_MAX_CLIENTS",
    "GATEWAY_OAUTH_UNUSED_CLIENT_HOURS",
):
    if globals()[_name] <= 0:
        raise ImproperlyConfigured(f"{_name} должен быть больше нуля")
# GigaChat's function block: its token budget, and characters per token as measured by
# `manage.py conformance gigachat` (the API's tokens/count); 3 over-counts on purpose.
GIGACHAT_FUNCTION_TOKEN_BUDGET = env.int("GIGACHAT_FUNCTION_TOKEN_BUDGET", default=3700)
GIGACHAT_CHARS_PER_TOKEN = env.float("GIGACHAT_CHARS_PER_TOKEN", default=3.0)
if not 1.0 <= GIGACHAT_CHARS_PER_TOKEN <= 8.0:
    raise ImproperlyConfigured(
        "GIGACHAT_CHARS_PER_TOKEN — от 1 до 8 "
        f"(измеренных символов на токен), а задано {GIGACHAT_CHARS_PER_TOKEN}"
    )
if not 100 <= GIGACHAT_FUNCTION_TOKEN_BUDGET <= 4096:
    raise ImproperlyConfigured(
        "GIGACHAT_FUNCTION_TOKEN_BUDGET — от 100 до 4096 "
        f"(предел GigaChat), а задано {GIGACHAT_FUNCTION_TOKEN_BUDGET}"
    )
