from django.urls import path

from .consent import consent_view

urlpatterns = [path("consent/", consent_view, name="oauth-consent")]
