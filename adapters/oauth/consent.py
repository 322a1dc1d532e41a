"""The consent page: an owner of a contour lets a registered client act on it.

Reached from /authorize (the SDK's handler checked the client, its redirect URI and the PKCE
challenge, and the provider signed those into `request`); the existing login comes first.
Allow: a grant (a contour key with the chosen toolsets, this person as its holder) and a
one-time code sent to the client's redirect URI. Deny: `access_denied` to the same URI.
"""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import urlsplit

from django import forms
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods
from mcp.server.auth.provider import construct_redirect_uri

from tools.models import Contour, Role, Toolset
from tools.people import roles
from tools.people.factors import stepup

from . import grants
from .models import OAuthClient
from .provider import CONSENT_SALT

CONSENT_MAX_AGE = 10 * 60  # seconds from /authorize to the person's decision


class ConsentForm(forms.Form):
    contour = forms.ChoiceField(label="Контур")
    toolsets = forms.MultipleChoiceField(label="Наборы инструментов", required=False,
                                         widget=forms.CheckboxSelectMultiple,
                                         choices=Toolset.choices)

    def __init__(self, *args: Any, owned: list[Contour], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owned = {contour.slug: contour for contour in owned}
        cast(forms.ChoiceField, self.fields["contour"]).choices = [
            (c.slug, f"{c.name} ({c.slug})") for c in owned]

    def clean(self) -> dict[str, Any]:
        super().clean()  # Django's returns self.cleaned_data (typed as maybe None)
        data = self.cleaned_data
        contour = self.owned.get(data.get("contour", ""))
        if contour is None:
            raise forms.ValidationError("выберите контур, которым вы владеете")
        chosen = [Toolset.READ.value, *(t for t in data.get("toolsets", []) if t != Toolset.READ)]
        wider = [t for t in chosen if not contour.has_toolset(t)]
        if wider:
            raise forms.ValidationError(
                f"в контуре «{contour.slug}» не включены наборы {', '.join(wider)}: "
                "доступ не может быть шире контура")
        data["contour_obj"], data["chosen"] = contour, chosen
        return data


def _back_to_client(request_data: dict[str, Any], **params: str | None) -> HttpResponseRedirect:
    return HttpResponseRedirect(construct_redirect_uri(
        request_data["redirect_uri"], **params, state=request_data.get("state")))


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def consent_view(request: HttpRequest) -> HttpResponse:
    source = request.POST if request.method == "POST" else request.GET
    try:
        asked = signing.loads(source.get("request", ""), salt=CONSENT_SALT,
                              max_age=CONSENT_MAX_AGE)
    except signing.BadSignature:  # SignatureExpired included
        return render(request, "oauth/invalid.html", status=400)
    client = OAuthClient.objects.filter(client_id=asked["client_id"]).first()
    if client is None:
        return render(request, "oauth/invalid.html", status=400)
    if request.method == "POST" and "deny" in request.POST:
        return _back_to_client(asked, error="access_denied",
                               error_description="владелец контура отказал в доступе")
    owned = list(roles.contours_for(request.user, Role.OWNER).order_by("slug"))
    redirect_host = urlsplit(asked["redirect_uri"]).netloc
    context = {"client": client, "redirect_host": redirect_host,
               "signed_request": source.get("request", ""), "owned": owned}
    if not owned:
        return render(request, "oauth/not_owner.html", context, status=403)
    # Read only unless the person ticks more, whatever the client asked for.
    form = ConsentForm(request.POST if request.method == "POST" else None, owned=owned,
                       initial={"contour": owned[0].slug, "toolsets": [Toolset.READ.value]})
    if request.method == "POST" and form.is_valid():
        code = grants.consent(
            client, form.cleaned_data["contour_obj"], request.user, form.cleaned_data["chosen"],
            redirect_uri=asked["redirect_uri"], redirect_uri_explicit=bool(asked["explicit"]),
            code_challenge=asked["challenge"], resource=asked.get("resource", ""),
            redirect_host=redirect_host, step_up=stepup.of_request(request))
        return _back_to_client(asked, code=code)
    return render(request, "oauth/consent.html", {**context, "form": form})
