"""Routes of the journal for auditors, mounted under /api/v1/."""

from django.urls import path

from audit import views

urlpatterns = [
    path("journal", views.listing, name="journal-list"),
    path("journal/export", views.export, name="journal-export"),
]
