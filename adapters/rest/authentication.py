"""Contour API keys as DRF authentication: `Authorization: Bearer <key>`."""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from adapters.oauth import challenge, grants
from tools.keys import scope as keys
from tools.models import ApiKey, Contour


@dataclass(frozen=True)
class ContourPrincipal:
    """The assistant behind a key; DRF's `request.user` for /api/v1."""

    contour: Contour
    key: ApiKey

    is_authenticated = True

    @property
    def actor(self) -> str:
        return keys.actor_of(self.key)


class ContourKeyAuthentication(BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ContourPrincipal, ApiKey] | None:
        header = get_authorization_header(request).decode("latin-1").split()
        if not header:
            return None
        if header[0].lower() != self.keyword.lower() or len(header) != 2:
            raise AuthenticationFailed("нужен заголовок Authorization: Bearer <ключ контура>")
        # A contour key, or an OAuth access token standing for its grant's key.
        key, _ = grants.authenticate(header[1])
        if key is None:
            raise AuthenticationFailed(
                "ключ API не найден, отозван или истёк (или токен выдан для другого сервера)"
            )
        keys.note_address(key, request.META.get("REMOTE_ADDR"))
        return ContourPrincipal(contour=key.contour, key=key), key

    def authenticate_header(self, request: Request) -> str:
        # As /mcp answers: an OAuth token is for this server's /mcp and serves REST as well.
        return challenge.unauthorized(bool(get_authorization_header(request)))


class HasContourKey(BasePermission):
    message = "нужен ключ API контура: Authorization: Bearer <ключ>"

    def has_permission(self, request: Request, view: object) -> bool:
        return isinstance(request.user, ContourPrincipal)
