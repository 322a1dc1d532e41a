"""A form kept across the second-factor check: submitted, refused for want of a fresh factor,
saved after the check without typing it again.

The one rule for every page of people (the admin's forms, the consent page): the save is
tried as posted; when a service refuses it with second_factor_required, the middleware keeps
the POST here and shows the check; the check page posts the code together with this form's
nonce back to the same address, where the code is checked first and the kept POST is put back
as request.POST for the view to save. Nothing is saved before the factor is proved (the service
still decides), and nothing is asked before a save needs it.

Kept in the session, sealed (tools.secret_box): a form may carry an Invoicebox token, and
sessions are signed, not encrypted. Taken once; unreadable after HELD_SECONDS; bound to the
person and the path it was posted to.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass

from django.http import HttpRequest, QueryDict

from tools import secret_box

HELD_KEY = "step-up-held:{nonce}"
HELD_FIELD = "_step_up_held"
CODE_FIELD = "_step_up_code"
HELD_SECONDS = 15 * 60
# Set on a request whose POST was put back after the check (the view may skip pages the
# person already went through before the refusal, e.g. the "enable writes?" confirmation).
RESUMED_ATTR = "step_up_resumed"
# A view may name what the kept form does in the person's words (else the service's action).
ACTION_ATTR = "step_up_action"


@dataclass(frozen=True)
class Held:
    nonce: str
    path: str
    action: str


def _drop_stale(request: HttpRequest) -> None:
    prefix = HELD_KEY.format(nonce="")
    now = time.time()
    for key in [k for k in request.session.keys() if k.startswith(prefix)]:
        kept = request.session.get(key)
        if not isinstance(kept, dict) or float(kept.get("until") or 0) < now:
            del request.session[key]


def hold(request: HttpRequest, action: str) -> str:
    """Keep this POST (sealed) until the check; the nonce the check page posts back."""
    _drop_stale(request)
    nonce = secrets.token_urlsafe(16)
    request.session[HELD_KEY.format(nonce=nonce)] = {
        "until": time.time() + HELD_SECONDS,
        "sealed": secret_box.seal(
            json.dumps(
                {
                    "user": request.user.pk,
                    "path": request.path,
                    "action": action,
                    "post": {
                        k: request.POST.getlist(k)
                        for k in request.POST
                        if k not in ("csrfmiddlewaretoken", HELD_FIELD, CODE_FIELD)
                    },
                }
            )
        ),
    }
    return nonce


def _unseal(request: HttpRequest, nonce: str) -> dict | None:
    kept = request.session.get(HELD_KEY.format(nonce=nonce)) if nonce else None
    if not isinstance(kept, dict):
        return None
    try:
        stashed = json.loads(secret_box.unseal(kept["sealed"], max_age=HELD_SECONDS))
    except (TypeError, KeyError, ValueError):
        return None
    if not isinstance(stashed, dict) or stashed.get("user") != request.user.pk:
        return None
    return stashed


def peek(request: HttpRequest, nonce: str) -> Held | None:
    """What the check page says of a kept form (None: none of this person's, or expired)."""
    stashed = _unseal(request, nonce)
    if stashed is None:
        return None
    return Held(nonce=nonce, path=str(stashed["path"]), action=str(stashed.get("action", "")))


def take(request: HttpRequest) -> bool:
    """Put the kept POST named by the posted nonce back as request.POST (once); False when there
    is none for this person and this address."""
    nonce = str(request.POST.get(HELD_FIELD, ""))
    stashed = _unseal(request, nonce)
    request.session.pop(HELD_KEY.format(nonce=nonce), None)
    _drop_stale(request)
    if stashed is None or stashed.get("path") != request.path:
        return False
    restored = QueryDict(mutable=True)
    for name, values in stashed["post"].items():
        restored.setlist(name, values)
    # The check page's own token (already accepted by CsrfViewMiddleware), for views that look.
    restored["csrfmiddlewaretoken"] = request.POST.get("csrfmiddlewaretoken", "")
    restored._mutable = False
    request.POST = restored  # type: ignore[assignment]  # django-stubs: POST is immutable-typed
    setattr(request, RESUMED_ATTR, True)
    return True
