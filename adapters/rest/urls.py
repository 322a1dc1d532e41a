"""REST routes for assistants (the wire contract's /api/v1)."""

from django.urls import include, path

from adapters.rest.views import CallView, ConfirmationView, ToolsView

urlpatterns = [
    path("tools", ToolsView.as_view(), name="tools"),
    path("call", CallView.as_view(), name="call"),
    path("confirmations/<uuid:confirmation_id>", ConfirmationView.as_view(), name="confirmation"),
    # Platform-shaped call endpoints live with their adapters.
    path("", include("adapters.functions.urls")),
    path("", include("adapters.text.urls")),
]
