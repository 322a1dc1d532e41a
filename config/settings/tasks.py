"""Celery: the broker, delivery guarantees and the beat schedule; the outbox and recovery sweeps."""

from django.core.exceptions import ImproperlyConfigured

from config.settings.environment import PRODUCTION, env
from config.settings.framework import TIME_ZONE

# Celery: eager by default so a fresh machine needs no broker; production needs Redis.
# memory:// with a host: without one kombu warns "No hostname was supplied" on every connection.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="memory://localhost/")
if CELERY_BROKER_URL == "memory://":
    CELERY_BROKER_URL = "memory://localhost/"
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=not PRODUCTION)
if PRODUCTION and not CELERY_TASK_ALWAYS_EAGER and CELERY_BROKER_URL.startswith("memory"):
    raise ImproperlyConfigured("при GATEWAY_ENV=production нужен CELERY_BROKER_URL (redis://...)")
CELERY_TASK_EAGER_PROPAGATES = True
# Every task is idempotent and takes ids: a worker killed mid-task hands the message back.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Redis hands an unacknowledged message (its worker died) to another worker after this long.
# It fits the longest task: a read of 30 s, retried, well under 2 minutes; task retries wait
# at most half of it (tools/background/tasks.py), and the outbox sweep re-sends what was lost anyway.
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
    "outbox": {  # tasks recorded with their cause and never reported done (tools/background/outbox.py)
        "task": "tools.outbox.sweep_outbox",
        "schedule": env.float("GATEWAY_OUTBOX_EVERY_SECONDS", default=30.0),
    },
    "recover-operations": {  # executions left in flight or unknown, resolved by lookup
        "task": "tools.recovery.resolve_operations",
        "schedule": env.float("GATEWAY_RECOVERY_EVERY_SECONDS", default=30.0),
    },
    "oauth-unused-clients": {  # registered, never consented to (adapters/oauth/registration.py)
        "task": "adapters.oauth.tasks.expire_unused_clients",
        "schedule": env.float("GATEWAY_OAUTH_CLIENT_SWEEP_EVERY_SECONDS", default=3600.0),
    },
    "mcp-sessions": {  # expired MCP sessions deleted in batches (adapters/mcp/tasks.py)
        "task": "adapters.mcp.tasks.expire_sessions",
        "schedule": env.float("GATEWAY_MCP_EXPIRE_EVERY_SECONDS", default=60.0),
    },
    "journal-partitions": {  # PostgreSQL: month partitions made ahead (audit/partitions.py)
        "task": "audit.tasks.make_journal_partitions",
        "schedule": env.float("GATEWAY_JOURNAL_PARTITIONS_EVERY_SECONDS", default=86400.0),
    },
    "journal-spool": {  # entries written while the database was away (audit/spool.py)
        "task": "audit.tasks.drain_journal_spool",
        "schedule": env.float("GATEWAY_SPOOL_EVERY_SECONDS", default=30.0),
    },
}
# An outbox task not reported done this long after it was sent is sent again (doubling).
GATEWAY_OUTBOX_LEASE_SECONDS = env.float("GATEWAY_OUTBOX_LEASE_SECONDS", default=60.0)
# At most this many unresolved operations are looked up per recovery run (tools/pipeline/sweep.py).
GATEWAY_RECOVERY_BATCH = env.int("GATEWAY_RECOVERY_BATCH", default=50)
