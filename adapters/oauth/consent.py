"""The consent page: a shop's owner lets an assistant (a registered OAuth client) act on it.

Reached from /authorize (the SDK's handler checked the client, its redirect URI and the PKCE
challenge, and the provider signed those into `request`); the existing login comes first and
says which assistant asks (ConsentLoginView). Allow: a grant (a contour key with the chosen
toolsets, this person as its holder) and a one-time code sent to the client's redirect URI.
Deny: `access_denied` to the same URI.

What the client asked for (its `scope`) is shown and ticked, within what the shop enables;
only toolsets some owned shop enables are offered. The client's name is its own claim (dynamic
registration), shown as such. A grant with write needs a fresh second factor: the form is kept
across the check and saved after it (tools/people/factors/held.py), as ticked.
"""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from django import forms
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods
from mcp.server.auth.provider import construct_redirect_uri

from tools.models import Contour, Role, Toolset
from tools.people import roles
from tools.people.factors import held, stepup

from . import grants
from .models import OAuthClient
from .provider import CONSENT_PATH, CONSENT_SALT

CONSENT_MAX_AGE = 10 * 60  # seconds from /authorize to the person's decision
# What each toolset lets an assistant do, in the owner's words (the catalog's tools).
TOOLSET_TEXTS = {
    Toolset.READ: "смотреть счета, оплаты, отгрузки и возвраты",
    Toolset.WRITE: "выставлять, менять и отменять счета, подтверждать отгрузки",
    Toolset.REFUND: "возвращать деньги покупателям",
}


class ConsentForm(forms.Form):
    contour = forms.ChoiceField(label="Магазин")
    toolsets = forms.MultipleChoiceField(
        label="Что ассистент сможет делать",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        choices=Toolset.choices,
    )

    def __init__(self, *args: Any, owned: list[Contour], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owned = {contour.slug: contour for contour in owned}
        cast(forms.ChoiceField, self.fields["contour"]).choices = [
            (c.slug, c.name or c.slug) for c in owned
        ]

    def clean(self) -> dict[str, Any]:
        super().clean()  # Django's returns self.cleaned_data (typed as maybe None)
        data = self.cleaned_data
        contour = self.owned.get(data.get("contour", ""))
        if contour is None:
            raise forms.ValidationError("выберите магазин, которым вы владеете")
        chosen = [Toolset.READ.value, *(t for t in data.get("toolsets", []) if t != Toolset.READ)]
        wider = [Toolset(t).label for t in chosen if not contour.has_toolset(t)]
        if wider:
            raise forms.ValidationError(
                f"в магазине «{contour.name or contour.slug}» ассистентам не разрешено: "
                f"{', '.join(wider)}. Снимите эту отметку или включите это в настройках "
                "магазина"
            )
        data["contour_obj"], data["chosen"] = contour, chosen
        return data


def offered(owned: list[Contour]) -> list[Toolset]:
    """Toolsets some owned shop enables (read always): nothing the owner could not give."""
    return [t for t in Toolset if t == Toolset.READ or any(c.has_toolset(t) for c in owned)]


def preselected(asked: list[str], contour: Contour) -> list[str]:
    """Read, and whatever else the client asked for that this shop enables."""
    return [
        t.value
        for t in Toolset
        if t == Toolset.READ or (t.value in asked and contour.has_toolset(t))
    ]


def _load(signed: str) -> tuple[dict[str, Any], OAuthClient] | None:
    try:
        asked = signing.loads(signed, salt=CONSENT_SALT, max_age=CONSENT_MAX_AGE)
    except signing.BadSignature:  # SignatureExpired included
        return None
    client = OAuthClient.objects.filter(client_id=asked.get("client_id", "")).first()
    return (asked, client) if client is not None else None


def _asked_scopes(asked: dict[str, Any]) -> list[str]:
    return [s for s in asked.get("scopes") or [] if s in Toolset.values]


def _client_context(asked: dict[str, Any], client: OAuthClient) -> dict[str, Any]:
    """Who asks, as it says itself, and where the answer goes."""
    scopes = _asked_scopes(asked)
    return {
        "client": client,
        "claimed_name": client.name.strip(),
        "redirect_host": urlsplit(asked["redirect_uri"]).netloc,
        "asked_labels": [Toolset(s).label for s in Toolset.values if s in scopes],
    }


def _back_to_client(request_data: dict[str, Any], **params: str | None) -> HttpResponseRedirect:
    return HttpResponseRedirect(
        construct_redirect_uri(
            request_data["redirect_uri"], **params, state=request_data.get("state")
        )
    )


def _toolset_rows(form: ConsentForm, owned: list[Contour]) -> list[dict[str, Any]]:
    ticked = set(form["toolsets"].value() or [])
    return [
        {
            "value": t.value,
            "label": t.label,
            "text": TOOLSET_TEXTS[t],
            "checked": t.value in ticked or t == Toolset.READ,
            "shops": " ".join(c.slug for c in owned if c.has_toolset(t)),
        }
        for t in offered(owned)
    ]


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def consent_view(request: HttpRequest) -> HttpResponse:
    source = request.POST if request.method == "POST" else request.GET
    loaded = _load(source.get("request", ""))
    if loaded is None:
        return render(request, "oauth/invalid.html", status=400)
    asked, client = loaded
    if request.method == "POST" and "deny" in request.POST:
        return _back_to_client(
            asked, error="access_denied", error_description="владелец магазина отказал в доступе"
        )
    owned = list(roles.contours_for(request.user, Role.OWNER).order_by("slug"))
    context = {
        **_client_context(asked, client),
        "signed_request": source.get("request", ""),
        "owned": owned,
    }
    if not owned:
        return render(request, "oauth/not_owner.html", context, status=403)
    form = ConsentForm(
        request.POST if request.method == "POST" else None,
        owned=owned,
        initial={"contour": owned[0].slug, "toolsets": preselected(_asked_scopes(asked), owned[0])},
    )
    if request.method == "POST" and form.is_valid():
        contour = form.cleaned_data["contour_obj"]
        # Named on the second-factor page, should the grant need one (the kept form).
        setattr(
            request,
            held.ACTION_ATTR,
            f"подключение ассистента «{client.display_name}» к магазину "
            f"«{contour.name or contour.slug}»",
        )
        code = grants.consent(
            client,
            contour,
            request.user,
            form.cleaned_data["chosen"],
            redirect_uri=asked["redirect_uri"],
            redirect_uri_explicit=bool(asked["explicit"]),
            code_challenge=asked["challenge"],
            resource=asked.get("resource", ""),
            redirect_host=context["redirect_host"],
            step_up=stepup.of_request(request),
        )
        return _back_to_client(asked, code=code)
    scopes = _asked_scopes(asked)
    return render(
        request,
        "oauth/consent.html",
        {
            **context,
            "form": form,
            "toolset_rows": _toolset_rows(form, owned),
            "not_offered": [
                t.label for t in Toolset if t.value in scopes and t not in offered(owned)
            ],
            "shops": [
                {"name": c.name or c.slug, "labels": [t.label for t in Toolset if c.has_toolset(t)]}
                for c in owned
            ],
            "step_up_needed": any(stepup.required(c) for c in owned),
        },
    )


def asking_client(next_url: str) -> dict[str, Any] | None:
    """Who asks to connect, when the login leads to the consent page (None otherwise)."""
    parts = urlsplit(next_url or "")
    if parts.path != CONSENT_PATH or parts.netloc:
        return None
    loaded = _load((parse_qs(parts.query).get("request") or [""])[0])
    return _client_context(*loaded) if loaded is not None else None


class ConsentLoginView(auth_views.LoginView):
    """The people's login; in front of the consent page it says which assistant asks."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["oauth_asking"] = asking_client(self.get_redirect_url())
        return context
