"""REST endpoints of this adapter, mounted under /api/v1/ (see adapters/rest/urls.py)."""

from django.urls import URLPattern, path

from adapters.functions.formats import PLATFORMS
from adapters.functions.views import call_view

urlpatterns: list[URLPattern] = [
    path(f"{platform.slug}/call", call_view(platform).as_view(), name=f"{platform.slug}-call")
    for platform in PLATFORMS
]
