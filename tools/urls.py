"""Routes of the operator UI."""

from django.urls import path

from tools import views

urlpatterns = [
    path("", views.queue, name="approval-queue"),
    path("<uuid:confirmation_id>/", views.detail, name="approval-detail"),
]
