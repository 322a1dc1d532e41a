"""REST endpoints of this adapter, mounted under /api/v1/ (see adapters/rest/urls.py)."""

from django.urls import URLPattern, path

from adapters.text.views import TextCallView

urlpatterns: list[URLPattern] = [
    path("text/call", TextCallView.as_view(), name="text-call"),
]
