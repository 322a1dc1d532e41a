"""OAuth as a Django app: its models (clients, grants, codes, tokens), consent page, admin."""

from django.apps import AppConfig


class OAuthConfig(AppConfig):
    name = "adapters.oauth"
    label = "oauth"
    verbose_name = "OAuth: подключённые ассистенты"
