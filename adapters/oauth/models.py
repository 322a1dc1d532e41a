"""What the authorization server keeps: registered clients, grants (each one contour ApiKey),
authorization codes and tokens. Codes and tokens are stored as SHA-256 hashes only."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from tools.models import ApiKey


class OAuthClient(models.Model):
    """A client registered through RFC 7591 (public: PKCE, no secret)."""

    client_id = models.CharField("client_id", max_length=64, unique=True)
    name = models.CharField("название клиента", max_length=200, blank=True)
    redirect_uris = models.JSONField("адреса возврата", default=list)
    # The registration as the SDK validated it (OAuthClientInformationFull), echoed back as is.
    metadata = models.JSONField("регистрация", default=dict)
    registered_at = models.DateTimeField("зарегистрирован", auto_now_add=True)
    # Who registered it, as a keyed hash of the address (registration.py counts by it; the
    # address itself is not kept).
    registered_from = models.CharField(
        "адрес регистрации (хеш)", max_length=64, blank=True, editable=False
    )

    class Meta:
        verbose_name = "клиент OAuth"
        verbose_name_plural = "клиенты OAuth"
        indexes = [models.Index(fields=["registered_from", "registered_at"])]

    def __str__(self) -> str:
        return self.display_name

    @property
    def display_name(self) -> str:
        return self.name or f"клиент {self.client_id[:8]}"


class OAuthGrant(models.Model):
    """An owner's consent: one client may act on one contour as the key `key`."""

    key = models.OneToOneField(
        ApiKey, models.CASCADE, related_name="oauth_grant", verbose_name="ключ гранта"
    )
    client = models.ForeignKey(
        OAuthClient, models.CASCADE, related_name="grants", verbose_name="клиент"
    )
    consented_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        models.SET_NULL,
        null=True,
        related_name="oauth_grants",
        verbose_name="кто разрешил",
    )
    resource = models.CharField("ресурс", max_length=500, blank=True)
    created_at = models.DateTimeField("разрешён", auto_now_add=True)

    class Meta:
        verbose_name = "доступ по OAuth"
        verbose_name_plural = "доступы по OAuth"

    def __str__(self) -> str:
        return f"{self.client.display_name} → {self.key.contour.slug}"

    @property
    def scopes(self) -> list[str]:
        return list(self.key.toolsets)

    def is_active(self) -> bool:
        return self.key.is_active()


class OAuthCode(models.Model):
    code_hash = models.CharField(max_length=64, unique=True)
    grant = models.ForeignKey(OAuthGrant, models.CASCADE, related_name="codes")
    redirect_uri = models.CharField(max_length=2000)
    redirect_uri_explicit = models.BooleanField(default=True)
    code_challenge = models.CharField(max_length=128)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "код авторизации"
        verbose_name_plural = "коды авторизации"

    def __str__(self) -> str:
        return f"код гранта {self.grant_id}"


class TokenKind(models.TextChoices):
    ACCESS = "access", "доступ"
    REFRESH = "refresh", "обновление"


class OAuthToken(models.Model):
    token_hash = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=8, choices=TokenKind.choices)
    grant = models.ForeignKey(OAuthGrant, models.CASCADE, related_name="tokens")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    # A refresh token is spent once: presented again, the whole grant is revoked.
    used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "токен OAuth"
        verbose_name_plural = "токены OAuth"
        indexes = [models.Index(fields=["grant", "kind"])]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} гранта {self.grant_id}"

    def is_live(self) -> bool:
        return self.revoked_at is None and self.used_at is None and self.expires_at > timezone.now()
