"""What protects a person's login without denying it to them (tools/people/logins.py uses this).

django-axes locks only the pair (username, address): five wrong passwords from one place
close that place to that name, never the name everywhere nor the address for everyone
behind it. Beyond the pair, failures slow down instead of locking: once one username (from
anywhere) or one address (for any name) has had more failures within AXES_COOLOFF_TIME than
its free allowance, each next attempt waits a doubling delay after the last failure, capped
at GATEWAY_LOGIN_BACKOFF_MAX_SECONDS, and is told how long ("попробуйте через N с").

When a known person's name reaches AXES_FAILURE_LIMIT failures within the window, they and
every superuser with an e-mail are told once per window (journaled as
`login_failures_reported`, which is also how the window's one letter is counted).
"""

from __future__ import annotations

import logging
import math
import smtplib
from datetime import datetime

from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db.models import Max, Q, Sum
from django.utils import timezone

from audit.models import JournalEntry
from tools import events

log = logging.getLogger(__name__)
REPORTED = "login_failures_reported"


def _window_start(now: datetime) -> datetime:
    return now - settings.AXES_COOLOFF_TIME


def _failures(where: Q, now: datetime) -> tuple[int, datetime | None]:
    """Failed attempts matching `where` within the window (axes' counts), and the last one."""
    found = AccessAttempt.objects.filter(where, attempt_time__gte=_window_start(now)).aggregate(
        count=Sum("failures_since_start"), last=Max("attempt_time")
    )
    return found["count"] or 0, found["last"]


def _wait(where: Q, free: int, now: datetime) -> int:
    count, last = _failures(where, now)
    if count < free or last is None:
        return 0
    delay = min(2 ** min(count - free, 30), settings.GATEWAY_LOGIN_BACKOFF_MAX_SECONDS)
    return max(0, math.ceil(delay - (now - last).total_seconds()))


def wait_seconds(username: str, address: str) -> int:
    """How long this attempt must wait before its password is even checked (0: go ahead)."""
    now = timezone.now()
    waits = [0]
    if username:
        waits.append(
            _wait(Q(username=username), settings.GATEWAY_LOGIN_USERNAME_FREE_FAILURES, now)
        )
    if address:
        waits.append(
            _wait(Q(ip_address=address), settings.GATEWAY_LOGIN_ADDRESS_FREE_FAILURES, now)
        )
    return max(waits)


def report_failures(username: str, *, channel: str) -> bool:
    """After a failed login of a known person: once their name has AXES_FAILURE_LIMIT failures
    within the window, tell them and the superusers, once per window. Whether a letter went."""
    person = get_user_model().objects.filter(username=username).first() if username else None
    if person is None:
        return False
    now = timezone.now()
    count, _last = _failures(Q(username=username), now)
    if count < settings.AXES_FAILURE_LIMIT:
        return False
    actor = f"login:{username}"
    if JournalEntry.objects.filter(code=REPORTED, actor=actor, at__gte=_window_start(now)).exists():
        return False
    addresses = (
        AccessAttempt.objects.filter(username=username, attempt_time__gte=_window_start(now))
        .values("ip_address")
        .distinct()
    )
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    superusers = list(
        get_user_model()
        .objects.filter(is_superuser=True, is_active=True)
        .exclude(email="")
        .exclude(pk=person.pk)
        .values_list("email", flat=True)
    )
    sent = _mail(
        [person.email] if person.email else [], _to_person(username, count, minutes)
    ) + _mail(superusers, _to_superusers(username, count, addresses.count(), minutes))
    events.login_failures_reported(
        username=username, failures=count, recipients=sent, channel=channel
    )
    return True


def _to_person(username: str, count: int, minutes: int) -> tuple[str, str]:
    return (
        "Шлюз Инвойсбокс: неудачные попытки входа в вашу учётную запись",
        f"За последние {minutes} мин было {count} неудачных попыток войти под именем "
        f"«{username}».\n\nЕсли это были не вы, смените пароль и сообщите администратору. "
        "Вход с других адресов для вас открыт; попытки подбора замедляются.",
    )


def _to_superusers(username: str, count: int, addresses: int, minutes: int) -> tuple[str, str]:
    return (
        f"Шлюз Инвойсбокс: подбор пароля к учётной записи «{username}»",
        f"За последние {minutes} мин: {count} неудачных попыток входа под именем "
        f"«{username}» с {addresses} адрес(ов). Подробности — в журнале (фаза login).",
    )


def _mail(recipients: list[str], letter: tuple[str, str]) -> int:
    if not recipients:
        return 0
    subject, body = letter
    try:
        send_mail(subject, body, None, recipients, fail_silently=False)
    except (smtplib.SMTPException, OSError) as error:
        log.warning("login failure report not sent (%s)", type(error).__name__)
        return 0
    return len(recipients)
