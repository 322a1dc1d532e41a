"""The owner's contour form waiting on the «Включить запись для ассистента?» page.

Kept in the session, not in hidden fields: a token typed into the form must not be echoed back
into a page. Sealed (tools.secret_box): sessions are signed, not encrypted, and the form may
carry the Invoicebox token and other secrets. Taken once on confirmation; unreadable after
PENDING_POST_SECONDS (Fernet's own timestamp); abandoned ones are dropped at the owner's next
stash or confirmation.
"""

from __future__ import annotations

import json
import secrets
import time

from django.http import HttpRequest, QueryDict

from tools import secret_box

PENDING_POST_KEY = "contour-writes:{nonce}"
PENDING_POST_SECONDS = 15 * 60
CONFIRM_FIELD = "_confirm_writes"


def drop_stale(request: HttpRequest) -> None:
    """Forget confirmation pages left unanswered past their time."""
    prefix = PENDING_POST_KEY.format(nonce="")
    now = time.time()
    for key in [k for k in request.session.keys() if k.startswith(prefix)]:
        kept = request.session.get(key)
        if not isinstance(kept, dict) or float(kept.get("until") or 0) < now:
            del request.session[key]


def stash(request: HttpRequest, object_id: str | None) -> str:
    """Keep this POST (sealed) for the confirmation; the nonce the page posts back."""
    drop_stale(request)
    nonce = secrets.token_urlsafe(16)
    request.session[PENDING_POST_KEY.format(nonce=nonce)] = {
        "until": time.time() + PENDING_POST_SECONDS,
        "sealed": secret_box.seal(
            json.dumps(
                {
                    "object_id": object_id or "",
                    "post": {
                        k: request.POST.getlist(k)
                        for k in request.POST
                        if k != "csrfmiddlewaretoken"
                    },
                }
            )
        ),
    }
    return nonce


def restore(request: HttpRequest, object_id: str | None) -> bool:
    """Put the stashed POST the confirmation names back as request.POST; False when there is
    none for this object (stale, expired, of an old shape, sealed under another key)."""
    kept = request.session.pop(
        PENDING_POST_KEY.format(nonce=request.POST.get(CONFIRM_FIELD, "")), None
    )
    drop_stale(request)
    try:
        stashed = json.loads(secret_box.unseal(kept["sealed"], max_age=PENDING_POST_SECONDS))
    except (TypeError, KeyError, ValueError):
        return False
    if stashed.get("object_id") != (object_id or ""):
        return False
    restored = QueryDict(mutable=True)
    for name, values in stashed["post"].items():
        restored.setlist(name, values)
    restored[CONFIRM_FIELD] = "1"
    request.POST = restored  # type: ignore[assignment]  # django-stubs: immutable only
    return True
