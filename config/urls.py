"""Top-level routes: admin, REST for assistants, OpenAPI, the Invoicebox sandbox."""

from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularSwaggerView

from adapters.oauth.consent import ConsentLoginView
from adapters.rest.not_found import not_found
from adapters.rest.openapi import SchemaView
from tools.background import notifications
from tools.ops.dashboard import dashboard_view
from tools.ops.health import health_view
from tools.ops.home import home_view
from tools.ops.scrape import metrics_view
from tools.people import admin_site
from tools.people.factors.admin import PeopleAdmin
from tools.people.logins import OperatorLoginForm

# The login form that names the right door, the user page without groups (tools/people/admin_site.py);
# both logins throttled by django-axes and journaling their failures (tools/people/logins.py).
admin_site.configure(admin.site, PeopleAdmin)

urlpatterns = [
    path("", home_view, name="home"),  # public: what this is, where to go
    path("admin/", admin.site.urls),
    path("approvals/", include("tools.people.urls")),
    path("account/second-factor/", include("tools.people.factors.views")),
    path("account/second-factor/webauthn/", include("tools.people.factors.passkeys")),
    path("dashboard/", dashboard_view, name="ops-dashboard"),  # owners
    path("health", health_view, name="ops-health"),  # public, names nothing
    path("metrics", metrics_view, name="ops-metrics"),  # METRICS_TOKEN / METRICS_ALLOWED_IPS
    path("health/", health_view),  # the slash the docs omit, accepted
    path("metrics/", metrics_view),
    # The people's login; in front of an OAuth consent it names the assistant that asks.
    path(
        "accounts/login/",
        ConsentLoginView.as_view(
            template_name="oauth/login.html", authentication_form=OperatorLoginForm
        ),
        name="login",
    ),
    path("oauth/", include("adapters.oauth.urls")),  # the owner's consent (OAuth for /mcp)
    path("api/v1/", include("audit.urls")),  # the journal for auditors
    path("api/v1/", include("adapters.rest.urls")),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    # Invoicebox payment notifications (webhook), one URL per contour.
    path(
        "invoicebox/notifications/<slug:slug>",
        notifications.receive,
        name="invoicebox-notifications",
    ),
]

if settings.GATEWAY_SANDBOX:
    urlpatterns.append(path("sandbox/invoicebox/", include("sandbox.urls")))

# Last: what no route above takes under the programs' prefixes is a JSON 404 (or the same
# route with the other trailing slash). /mcp itself is config/asgi.py's; WSGI has no MCP.
urlpatterns += [re_path(r"^api/", not_found), re_path(r"^mcp", not_found)]
