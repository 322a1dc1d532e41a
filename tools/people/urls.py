"""Routes of the operator UI."""

from django.urls import path

from tools.people import operator_views as views

urlpatterns = [
    path("", views.queue, name="approval-queue"),
    path("rows/", views.queue_rows, name="approval-queue-rows"),
    path("<uuid:confirmation_id>/", views.detail, name="approval-detail"),
]
