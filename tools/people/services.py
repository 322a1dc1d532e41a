"""People's powers through one door: the superuser, staff and active flags and another
person's password change only here (roles: tools/people/grants.py; devices:
tools/people/factors/devices.py). Each change needs the actor's fresh second factor wherever one is
required (stepup.required_anywhere), is refused to anyone but a superuser (or the shell), and
is journaled: who changed what for whom, never the password itself."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from audit.actors import cli_actor, user_actor
from tools import events
from tools.errors import ToolError
from tools.people.factors import stepup

FLAGS = {
    "is_superuser": "суперпользователь",
    "is_staff": "доступ в админку",
    "is_active": "учётная запись активна",
}


def _allowed(
    person: Any, *, actor: Any | None, step_up: stepup.StepUp, action: str, own: bool = False
) -> stepup.FactorProof | None:
    """The actor's right and fresh factor for `action` (raises ToolError when refused).
    actor None: a manage.py command, with the shell's proof (stepup.from_shell())."""
    if actor is None:
        if step_up.proof is None or step_up.proof.kind != stepup.SHELL:
            raise ToolError("forbidden", f"{action}: не назван, кто это делает")
    else:
        if step_up.person is None or step_up.person.pk != actor.pk:
            raise ToolError(
                "forbidden", f"{action}: проверка вторым фактором — не того, кто это делает"
            )
        if not actor.is_active or not (actor.is_superuser or (own and actor.pk == person.pk)):
            raise ToolError("forbidden", f"{action}: это может только суперпользователь")
    return stepup.require(step_up, contour=None, action=action, strict=stepup.required_anywhere())


def _name(actor: Any | None) -> str:
    return user_actor(actor) if actor is not None else cli_actor()


def set_flag(
    person: Any, flag: str, value: bool, *, actor: Any | None, step_up: stepup.StepUp
) -> bool:
    """Set one of FLAGS on person; False (nothing checked, nothing journaled) when it already
    was so."""
    if flag not in FLAGS:
        raise ValueError(f"unknown flag {flag!r}; known: {', '.join(FLAGS)}")
    value = bool(value)
    if getattr(person, flag) == value:
        return False
    action = f"{person.get_username()}: «{FLAGS[flag]}» — {'да' if value else 'нет'}"
    proof = _allowed(person, actor=actor, step_up=step_up, action=action)
    with transaction.atomic():
        setattr(person, flag, value)
        person.save(update_fields=[flag])
        events.person_changed(
            person,
            "person_flag_changed",
            action,
            changes={flag: {"before": not value, "after": value}},
            second_factor=stepup.record_of(proof),
            actor=_name(actor),
            channel=step_up.channel,
        )
    return True


def set_password(
    person: Any, raw: str | None, *, actor: Any | None, step_up: stepup.StepUp
) -> None:
    """Set person's password (None: password login off for them). Another person's only by a
    superuser; one's own too, with one's own fresh factor. The journal says that it changed."""
    action = f"{person.get_username()}: пароль " + ("задан" if raw is not None else "отключён")
    proof = _allowed(person, actor=actor, step_up=step_up, action=action, own=True)
    with transaction.atomic():
        if raw is None:
            person.set_unusable_password()
        else:
            person.set_password(raw)
        person.save(update_fields=["password"])
        events.person_changed(
            person,
            "person_password_set",
            action,
            changes={"password": "set" if raw is not None else "unusable"},
            second_factor=stepup.record_of(proof),
            actor=_name(actor),
            channel=step_up.channel,
        )
