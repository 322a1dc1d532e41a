"""Routes of the bundled Invoicebox sandbox: every path under the mount goes to one view."""

from django.urls import re_path

from sandbox.api import sandbox_view

app_name = "invoicebox_sandbox"

urlpatterns = [
    re_path(r"^(?P<rest>.*)$", sandbox_view, name="sandbox"),
]
