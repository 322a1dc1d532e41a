"""Every Celery task of the tools app, in one module of the name Celery's autodiscovery looks for
(config/celery.py: `<app>.tasks`); tools/apps.py imports it too, so every process (a worker, a
web process sending through the outbox) has them registered. Task names are wire names, fixed
in each decorator, whatever module a task lives in."""

from tools.background import alerts, outbox  # noqa: F401
from tools.background import tasks as background  # noqa: F401
from tools.pipeline import sweep  # noqa: F401
