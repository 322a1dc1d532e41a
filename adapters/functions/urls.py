"""REST endpoints of this adapter, mounted under /api/v1/ (see adapters/rest/urls.py)."""

from django.urls import URLPattern, path

from adapters.functions.views import GigaChatCallView, OpenAICallView, YandexGPTCallView

urlpatterns: list[URLPattern] = [
    path("gigachat/call", GigaChatCallView.as_view(), name="gigachat-call"),
    path("yandexgpt/call", YandexGPTCallView.as_view(), name="yandexgpt-call"),
    path("openai/call", OpenAICallView.as_view(), name="openai-call"),
]
