"""A person's second-factor devices: enroll TOTP, issue backup codes, reset (journaled)."""

from __future__ import annotations

import logging
from base64 import b32encode
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django_otp import devices_for_user
from django_otp.models import Device
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice
from django_otp_webauthn.utils import get_credential_model

from audit.actors import user_actor
from tools import events

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
    return TOTPDevice.objects.filter(user=user, confirmed=False).order_by("-id").first()


def start_totp(user: Any, *, name: str = TOTP_NAME) -> TOTPDevice:
    """A new unconfirmed TOTP device (replacing any earlier unconfirmed one): it counts only
    after confirm_totp() saw a right code from it."""
    with transaction.atomic():
        TOTPDevice.objects.filter(user=user, confirmed=False).delete()
        return TOTPDevice.objects.create(user=user, name=name, confirmed=False)


def secret_base32(device: TOTPDevice) -> str:
    """For typing by hand: groups of four, as authenticator apps show them."""
    raw = b32encode(device.bin_key).decode().rstrip("=")
    return " ".join(raw[i:i + 4] for i in range(0, len(raw), 4))


def confirm_totp(user: Any, code: str, *, channel: str = "ui") -> TOTPDevice | None:
    """Confirm the pending TOTP device with a code from it; None when the code is wrong
    (the device's own throttling counts the failure)."""
    with transaction.atomic():
        device = (TOTPDevice.objects.select_for_update()
                  .filter(user=user, confirmed=False).order_by("-id").first())
        if device is None or not device.verify_token(code.strip()):
            return None
        device.confirmed = True
        device.save(update_fields=["confirmed"])
        record(user, "second_factor_enrolled", f"{user.get_username()}: подключено "
               f"{KIND_LABELS[TOTP]} «{label_of(device)}»", channel=channel,
               actor=user_actor(user), kind=TOTP, device=label_of(device))
    return device


def issue_backup_codes(user: Any, *, channel: str = "ui") -> list[str]:
    """Replace the person's backup codes with BACKUP_CODES new ones, each usable once.
    Shown to the person once; only the codes themselves are stored (django-otp's model)."""
    codes = [StaticToken.random_token() for _ in range(BACKUP_CODES)]
    with transaction.atomic():
        StaticDevice.objects.filter(user=user).delete()
        device = StaticDevice.objects.create(user=user, name=BACKUP_NAME, confirmed=True)
        StaticToken.objects.bulk_create(StaticToken(device=device, token=c) for c in codes)
        record(user, "backup_codes_issued", f"{user.get_username()}: выпущено "
               f"{BACKUP_CODES} резервных кодов (прежние недействительны)", channel=channel,
               actor=user_actor(user), kind=BACKUP, device=BACKUP_NAME)
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
        record(person, "second_factor_reset", f"{person.get_username()}: все устройства "
               f"второго фактора сброшены ({by})", channel=channel, actor=by, kind="",
               device="", removed=removed)
        if person.email:
            transaction.on_commit(lambda: _tell_reset(person, by))
    return removed


def _tell_reset(person: Any, by: str) -> None:
    body = (f"Здравствуйте, {person.get_username()}.\n\nВсе ваши устройства второго фактора "
            f"в шлюзе Инвойсбокс сброшены ({by}). Чтобы снова принимать решения, подключите "
            f"устройство: {settings.GATEWAY_SITE_URL}/account/second-factor/\n\nЕсли вы об этом "
            "не просили, сразу сообщите администратору шлюза.")
    try:
        send_mail("Шлюз Инвойсбокс: второй фактор сброшен", body,
                  settings.DEFAULT_FROM_EMAIL, [person.email])
    except OSError:  # smtplib's errors are OSErrors; the reset itself stands and is journaled
        logger.warning("second-factor reset alert to user %s not sent", person.pk,
                       exc_info=True)


def record(person: Any, code: str, message: str, *, channel: str, actor: str, kind: str,
           device: str, **extra: Any) -> None:
    events.second_factor(person, code, message, actor=actor, channel=channel, kind=kind,
                         device=device, **extra)
