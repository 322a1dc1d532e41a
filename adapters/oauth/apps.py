"""OAuth as a Django app: its models (clients, grants, codes, tokens), consent page, admin."""

from django.apps import AppConfig


class OAuthConfig(AppConfig):
    name = "adapters.oauth"
    label = "oauth"
    verbose_name = "OAuth: подключённые ассистенты"

    def ready(self) -> None:
        # Imported here: Django imports an AppConfig before any app's models are loaded.
        import rules

        from tools.people.roles import is_owner

        # As for keys: an owner sees and revokes the grants of the contours they own.
        rules.set_perm("oauth.view_oauthgrant", is_owner)
        rules.set_perm("oauth.change_oauthgrant", is_owner)
