"""A person's second-factor devices: enroll TOTP, prepare one for another person, issue backup
codes, reset. Each is journaled and the person is told by email.

Who may add a device is stepup.enrolment_refusal()'s rule (the pages and the passkey ceremony
ask it before calling here); a prepared device (manage.py add_totp) is confirmed by its first
code alone: the code proves the person holds what was handed over out of band."""

from __future__ import annotations

import logging
from base64 import b32encode
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone
from django_otp import devices_for_user
from django_otp.models import Device
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice
from django_otp_webauthn.utils import get_credential_model

from audit.actors import user_actor
from tools import events
from tools.errors import ToolError
from tools.models import PreparedDevice

logger = logging.getLogger(__name__)

TOTP = "totp"
BACKUP = "static"
PASSKEY = "webauthn"
KIND_LABELS = {TOTP: "приложение (TOTP)", BACKUP: "резервный код", PASSKEY: "ключ доступа"}
TOTP_NAME = "Приложение-аутентификатор"
ADMIN_TOTP_NAME = "Приложение (выдано администратором)"
BACKUP_NAME = "Резервные коды"
BACKUP_CODES = 10


def person_named(username: str) -> Any | None:
    """The person a command names (add_totp, reset_second_factor); None when nobody is."""
    return get_user_model().objects.filter(username=username).first()


def kind_of(device: Device) -> str:
    if isinstance(device, TOTPDevice):
        return TOTP
    if isinstance(device, StaticDevice):
        return BACKUP
    if isinstance(device, get_credential_model()):
        return PASSKEY
    raise ValueError(f"unknown device class {type(device).__name__}")


def label_of(device: Device) -> str:
    return str(device.name or KIND_LABELS[kind_of(device)])[:200]


def confirmed(user: Any) -> list[Device]:
    """The person's devices that count (a TOTP device counts after its first right code)."""
    if not user or not user.is_authenticated:
        return []
    return list(devices_for_user(user, confirmed=True))


def has_primary(user: Any) -> bool:
    """A TOTP app or a passkey (backup codes alone are for recovery, not for enrolling)."""
    return any(kind_of(device) != BACKUP for device in confirmed(user))


def pending_totp(user: Any) -> TOTPDevice | None:
    """The TOTP device the person started themselves and has not confirmed yet."""
    return (
        TOTPDevice.objects.filter(user=user, confirmed=False, prepared__isnull=True)
        .order_by("-id")
        .first()
    )


def prepared_totp(user: Any) -> TOTPDevice | None:
    """The device another person prepared for this one, while it may still be confirmed (an
    expired one is deleted here)."""
    device = (
        TOTPDevice.objects.select_related("prepared")
        .filter(user=user, confirmed=False, prepared__isnull=False)
        .order_by("-id")
        .first()
    )
    if device is not None and _expired(device.prepared):
        device.delete()
        return None
    return device


def _expired(marker: PreparedDevice) -> bool:
    age = timezone.now() - marker.created_at
    return age.total_seconds() > int(settings.GATEWAY_PREPARED_DEVICE_SECONDS)


def start_totp(user: Any) -> TOTPDevice:
    """A new unconfirmed TOTP device of the person's own (replacing an earlier one they
    started): it counts only after confirm_totp() saw a right code from it."""
    with transaction.atomic():
        TOTPDevice.objects.filter(user=user, confirmed=False, prepared__isnull=True).delete()
        return TOTPDevice.objects.create(user=user, name=TOTP_NAME, confirmed=False)


def prepare_totp(person: Any, *, by: str, channel: str) -> TOTPDevice:
    """A TOTP device prepared by `by` for person (replacing any unconfirmed one): its otpauth://
    URI is handed over out of band, never shown on the web; its first code confirms it within
    GATEWAY_PREPARED_DEVICE_SECONDS. Journaled; the person is told by email."""
    with transaction.atomic():
        TOTPDevice.objects.filter(user=person, confirmed=False).delete()
        device = TOTPDevice.objects.create(user=person, name=ADMIN_TOTP_NAME, confirmed=False)
        PreparedDevice.objects.create(device=device, prepared_by=by)
        record(
            person,
            "second_factor_prepared",
            f"{person.get_username()}: приложение подготовлено ({by}), ждёт первого кода",
            channel=channel,
            actor=by,
            kind=TOTP,
            device=label_of(device),
        )
        _tell_on_commit(
            person,
            "Шлюз Инвойсбокс: для вас подготовлено приложение",
            f"Для вас подготовлено приложение-аутентификатор ({by}). Ссылку для "
            "приложения вам передадут лично; введите первый код из него на "
            f"странице {settings.GATEWAY_SITE_URL}/account/second-factor/ в "
            f"течение {int(settings.GATEWAY_PREPARED_DEVICE_SECONDS) // 3600} ч.",
        )
    return device


def secret_base32(device: TOTPDevice) -> str:
    """For typing by hand: groups of four, as authenticator apps show them."""
    raw = b32encode(device.bin_key).decode().rstrip("=")
    return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4))


def confirm_totp(user: Any, code: str, *, prepared: bool, channel: str = "ui") -> TOTPDevice | None:
    """Confirm the person's pending TOTP device (`prepared`: the one prepared for them, else
    the one they started) with a code from it; None when the code is wrong (the device's own
    throttling counts the failure). A prepared device past its time is deleted and refused."""
    expired = False
    with transaction.atomic():
        # of=self: PostgreSQL locks no row on the outer side of the join to its marker.
        device = (
            TOTPDevice.objects.select_for_update(of=("self",))
            .filter(user=user, confirmed=False, prepared__isnull=not prepared)
            .order_by("-id")
            .first()
        )
        if device is not None and prepared and _expired(device.prepared):
            device.delete()
            device, expired = None, True
        elif device is not None and device.verify_token(code.strip()):
            device.confirmed = True
            device.save(update_fields=["confirmed"])
            PreparedDevice.objects.filter(device=device).delete()
            enrolled(user, device, channel=channel)
        else:
            device = None
    # Raised after the block, so the expired device's deletion is not rolled back with it.
    if expired:
        raise ToolError(
            "prepared_device_expired",
            "срок подготовленного приложения истёк: попросите администратора подготовить новое",
        )
    return device


def enrolled(user: Any, device: Device, *, channel: str) -> None:
    """Journal a device the person just added and tell them by email."""
    kind = kind_of(device)
    record(
        user,
        "second_factor_enrolled",
        f"{user.get_username()}: подключено {KIND_LABELS[kind]} «{label_of(device)}»",
        channel=channel,
        actor=user_actor(user),
        kind=kind,
        device=label_of(device),
    )
    _tell_on_commit(
        user,
        "Шлюз Инвойсбокс: подключено устройство второго фактора",
        f"К вашей учётной записи подключено {KIND_LABELS[kind]} «{label_of(device)}».",
    )


def issue_backup_codes(user: Any, *, channel: str = "ui") -> list[str]:
    """Replace the person's backup codes with BACKUP_CODES new ones, each usable once.
    Shown to the person once; only the codes themselves are stored (django-otp's model)."""
    codes = [StaticToken.random_token() for _ in range(BACKUP_CODES)]
    with transaction.atomic():
        StaticDevice.objects.filter(user=user).delete()
        device = StaticDevice.objects.create(user=user, name=BACKUP_NAME, confirmed=True)
        StaticToken.objects.bulk_create(StaticToken(device=device, token=c) for c in codes)
        record(
            user,
            "backup_codes_issued",
            f"{user.get_username()}: выпущено "
            f"{BACKUP_CODES} резервных кодов (прежние недействительны)",
            channel=channel,
            actor=user_actor(user),
            kind=BACKUP,
            device=BACKUP_NAME,
        )
        _tell_on_commit(
            user,
            "Шлюз Инвойсбокс: выпущены резервные коды",
            f"Для вашей учётной записи выпущено {BACKUP_CODES} новых резервных "
            "кодов; прежние больше не действуют.",
        )
    return codes


def backup_codes_left(user: Any) -> int:
    return StaticToken.objects.filter(device__user=user, device__confirmed=True).count()


def reset(person: Any, *, by: str, channel: str) -> int:
    """Remove every device of person (a lost phone, a lost key); journaled, and the person is
    told by email. They enroll anew at their next decision. Returns how many were removed."""
    removed = 0
    with transaction.atomic():
        for model in (TOTPDevice, StaticDevice, get_credential_model()):
            count, _ = model.objects.filter(user=person).delete()
            removed += count
        record(
            person,
            "second_factor_reset",
            f"{person.get_username()}: все устройства второго фактора сброшены ({by})",
            channel=channel,
            actor=by,
            kind="",
            device="",
            removed=removed,
        )
        _tell_on_commit(
            person,
            "Шлюз Инвойсбокс: второй фактор сброшен",
            f"Все ваши устройства второго фактора в шлюзе Инвойсбокс сброшены "
            f"({by}). Чтобы снова принимать решения, подключите устройство: "
            f"{settings.GATEWAY_SITE_URL}/account/second-factor/",
        )
    return removed


def _tell_on_commit(person: Any, subject: str, news: str) -> None:
    """Tell the person by email once the change commits (no secret, no code in it)."""
    if not person.email:
        return
    body = (
        f"Здравствуйте, {person.get_username()}.\n\n{news}\n\nЕсли вы об этом не "
        "просили, сразу сообщите администратору шлюза."
    )
    transaction.on_commit(lambda: _send(person, subject, body))


def _send(person: Any, subject: str, body: str) -> None:
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [person.email])
    except OSError:  # smtplib's errors are OSErrors; the change itself stands and is journaled
        logger.warning("second-factor alert to user %s not sent", person.pk, exc_info=True)


def record(
    person: Any,
    code: str,
    message: str,
    *,
    channel: str,
    actor: str,
    kind: str,
    device: str,
    **extra: Any,
) -> None:
    events.second_factor(
        person, code, message, actor=actor, channel=channel, kind=kind, device=device, **extra
    )
