"""REST endpoints of this adapter, mounted under /api/v1/ (see adapters/rest/urls.py)."""

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
