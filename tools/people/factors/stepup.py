"""Step-up: the one rule "this needs a second factor checked within GATEWAY_STEP_UP_SECONDS".

Deciding a confirmation (`refusal()`, in tools/pipeline/approvals.py) and every widening of what
assistants may do (`require()`, in tools/services/) ask here, whichever surface (operator UI,
admin, command) reached them. A web surface hands in the proof its session holds
(`of_request`, `from_post`); a manage.py command hands in `from_shell()`: whoever runs
commands on the server can change the database directly, so a factor would prove nothing
there; the journal names the channel (cli) instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django_otp import login as otp_login
from django_otp.models import Device
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice

from audit.actors import user_actor
from tools import events
from tools.errors import ToolError
from tools.models import Contour
from tools.people.factors import devices

SESSION_KEY = "gateway_step_up"
SHELL = "shell"


@dataclass(frozen=True)
class FactorProof:
    """Which factor a person proved, on which device, when. `kind` is devices.TOTP, BACKUP,
    PASSKEY or SHELL (a manage.py command: no person's session)."""

    user_id: int | None
    kind: str
    device: str
    device_id: str
    checked_at: datetime

    def as_record(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "device": self.device,
            "checked": True,
            "checked_at": self.checked_at.isoformat(),
        }


NOT_CHECKED: dict[str, Any] = {"kind": "", "device": "", "checked": False, "checked_at": None}


def record_of(proof: FactorProof | None) -> dict[str, Any]:
    return proof.as_record() if proof is not None else dict(NOT_CHECKED)


def shell() -> FactorProof:
    return FactorProof(
        user_id=None, kind=SHELL, device="manage.py", device_id="", checked_at=timezone.now()
    )


def window_seconds() -> int:
    return int(settings.GATEWAY_STEP_UP_SECONDS)


def required(contour: Any | None = None, *, strict: bool = False) -> bool:
    """On for every contour when GATEWAY_REQUIRE_SECOND_FACTOR; a contour may add it, never
    drop it (`strict`: it had it before the change being checked)."""
    if settings.GATEWAY_REQUIRE_SECOND_FACTOR or strict:
        return True
    return bool(contour is not None and getattr(contour, "require_second_factor", False))


def required_anywhere() -> bool:
    """Whether some decision here needs a second factor: on every contour
    (GATEWAY_REQUIRE_SECOND_FACTOR) or on one whose owner turned it on. Then a password alone
    never adds the first device (enrolment_refusal) nor changes people's powers."""
    return bool(
        settings.GATEWAY_REQUIRE_SECOND_FACTOR
        or Contour.objects.filter(require_second_factor=True).exists()
    )


def enrolment_refusal(request: HttpRequest) -> ToolError | None:
    """Why the person behind request may not add a device of their own now (None: they may):
    a TOTP app, a passkey, new backup codes. A person with a device adds another only right
    after a check of an existing one; a person with none, where a second factor is required
    anywhere, gets the first one prepared by an administrator (manage.py add_totp), never by
    the password alone."""
    user = request.user
    if devices.confirmed(user):
        if is_fresh(request):
            return None
        return ToolError(
            "second_factor_required",
            "чтобы добавить устройство или выпустить "
            "новые резервные коды, сначала подтвердите вход уже подключённым "
            "устройством",
        )
    if required_anywhere():
        return ToolError(
            "second_factor_bootstrap_required",
            "в этом шлюзе второй фактор "
            "обязателен, и первое устройство по одному паролю не подключается: "
            "попросите администратора выполнить manage.py add_totp "
            f"{user.get_username()} и лично передать вам ссылку для приложения, "
            "затем введите здесь первый код из него",
        )
    return None


def _device(proof: FactorProof) -> Device | None:
    device = Device.from_persistent_id(proof.device_id) if proof.device_id else None
    if device is None or not device.confirmed or device.user_id != proof.user_id:
        return None
    return device


def _stale(user: Any, proof: FactorProof | None, action: str) -> ToolError | None:
    """Why proof is no fresh check of one of user's devices (None: it is)."""
    if not devices.confirmed(user):
        return ToolError(
            "second_factor_required",
            f"{action}: нужен второй фактор, а у вас не подключено ни одного устройства",
            hint="подключите приложение или ключ доступа на странице «Второй фактор»",
            data={"action": action},
        )
    if proof is None or proof.user_id != user.pk or _device(proof) is None:
        return ToolError(
            "second_factor_required",
            f"{action}: подтвердите вход вторым фактором (код из приложения, "
            "резервный код или ключ доступа)",
            data={"action": action},
        )
    age = timezone.now() - proof.checked_at
    if age > timedelta(seconds=window_seconds()):
        return ToolError(
            "second_factor_required",
            f"{action}: проверка вторым фактором устарела (была "
            f"{int(age.total_seconds())} с назад, действует "
            f"{window_seconds()} с); подтвердите снова",
            data={"action": action},
        )
    return None


def refusal(
    user: Any, proof: FactorProof | None, *, contour: Any | None, action: str
) -> ToolError | None:
    """Why `action` may not go ahead without a fresh factor (None: it may)."""
    if not required(contour):
        return None
    if proof is not None and proof.kind == SHELL:
        return None
    return _stale(user, proof, action)


@dataclass(frozen=True)
class StepUp:
    """Who acts and the factor they proved: what a service that widens assistants' rights is
    handed by its surface (of_request() on the web, from_shell() in a manage.py command)."""

    person: Any | None
    proof: FactorProof | None
    channel: str = "ui"


def from_shell() -> StepUp:
    return StepUp(person=None, proof=shell(), channel="cli")


def require(
    step_up: StepUp | None, *, contour: Any | None, action: str, strict: bool = False
) -> FactorProof | None:
    """The widening services' check: refused without a fresh factor where one is required
    (no step-up handed in counts as none). Returns the proof to journal."""
    proof = step_up.proof if step_up is not None else None
    if not required(contour, strict=strict) or (proof is not None and proof.kind == SHELL):
        return proof
    if step_up is None or step_up.person is None:
        raise ToolError(
            "second_factor_required",
            f"{action}: нужна проверка вторым фактором того, кто это делает",
            data={"action": action},
        )
    error = _stale(step_up.person, proof, action)
    if error is not None:
        raise error
    assert proof is not None
    person = step_up.person
    # The change's own entry follows in the same transaction; this one names the device.
    events.second_factor(
        person,
        "second_factor_checked",
        f"{action}: подтверждено вторым "
        f"фактором ({devices.KIND_LABELS.get(proof.kind, proof.kind)} "
        f"«{proof.device}»)",
        actor=user_actor(person),
        channel=step_up.channel,
        contour=getattr(contour, "slug", "") or "",
        **proof.as_record(),
    )
    return proof


def stamp(request: HttpRequest, device: Device) -> FactorProof:
    """Remember in the session that this person just proved this device."""
    otp_login(request, device)
    proof = FactorProof(
        user_id=request.user.pk,
        kind=devices.kind_of(device),
        device=devices.label_of(device),
        device_id=device.persistent_id,
        checked_at=timezone.now(),
    )
    request.session[SESSION_KEY] = {
        "user": proof.user_id,
        "kind": proof.kind,
        "device": proof.device,
        "device_id": proof.device_id,
        "at": proof.checked_at.isoformat(),
    }
    return proof


def of_request(request: HttpRequest) -> StepUp:
    channel = "admin" if request.path.startswith("/admin/") else "ui"
    return StepUp(person=request.user, proof=from_request(request), channel=channel)


def from_request(request: HttpRequest) -> FactorProof | None:
    """The proof the session holds, if any (freshness is refusal()'s to judge)."""
    data = request.session.get(SESSION_KEY)
    user = getattr(request, "user", None)
    if not isinstance(data, dict) or user is None or data.get("user") != user.pk:
        return None
    checked_at = parse_datetime(str(data.get("at", "")))
    if checked_at is None:
        return None
    return FactorProof(
        user_id=user.pk,
        kind=str(data.get("kind", "")),
        device=str(data.get("device", "")),
        device_id=str(data.get("device_id", "")),
        checked_at=checked_at,
    )


def is_fresh(request: HttpRequest) -> bool:
    """Whether the session holds a check of one of the person's devices within the window
    (required or not)."""
    return _stale(request.user, from_request(request), "") is None


def verify_code(request: HttpRequest, code: str) -> FactorProof:
    """Check a code from the person's TOTP app or one of their backup codes, then stamp the
    session. A wrong code, a code already used (django-otp keeps the last TOTP step used) and a
    throttled device are refused and journaled; each device throttles its own failures."""
    user = request.user
    code = "".join(code.split())
    if not code:
        raise ToolError("second_factor_required", "введите код второго фактора")
    throttled_for = 0
    # Six digits go to the app, anything else to the backup codes (eight letters and digits),
    # so a backup code never counts as a failure against the app, nor the other way round.
    model = TOTPDevice if code.isdigit() and len(code) == 6 else StaticDevice
    for device_id in model.objects.filter(user=user, confirmed=True).values_list("pk", flat=True):
        with transaction.atomic():
            # Row lock: two requests with one code cannot both pass the last-step check.
            device = model.objects.select_for_update().get(pk=device_id)
            allowed, info = device.verify_is_allowed()
            if not allowed:
                throttled_for = max(throttled_for, _seconds_left(info))
                continue
            if device.verify_token(code):
                return stamp(request, device)
    _journal_failure(user, throttled=bool(throttled_for))
    if throttled_for:
        raise ToolError(
            "second_factor_throttled",
            f"слишком много неверных кодов: попробуйте снова через {throttled_for} с",
        )
    raise ToolError(
        "second_factor_invalid", "код не подошёл (неверный, устаревший или уже использованный)"
    )


def from_post(request: HttpRequest, field: str = "otp_code") -> FactorProof | None:
    """A code posted with the form is checked first; otherwise the session's proof."""
    code = str(request.POST.get(field, "")).strip()
    if code:
        return verify_code(request, code)
    return from_request(request)


def _seconds_left(info: dict[str, Any] | None) -> int:
    locked_until = (info or {}).get("locked_until")
    if locked_until is None:
        return 1
    return max(1, int((locked_until - timezone.now()).total_seconds() + 0.999))


def _journal_failure(user: Any, *, throttled: bool) -> None:
    code = "second_factor_throttled" if throttled else "second_factor_invalid"
    events.second_factor(
        user,
        code,
        "второй фактор: код отклонён" + (" (слишком много попыток)" if throttled else ""),
        actor=user_actor(user),
        channel="ui",
        status="rejected",
    )
