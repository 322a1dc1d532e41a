"""API keys: a contour's Bearer keys, stored as hashes, and how a raw key is authenticated."""

from __future__ import annotations

import secrets
from contextvars import ContextVar
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from django.conf import settings
from django.db import models
from django.db.models.functions import Now
from django.utils import timezone

from tools.hashing import sha256_hex
from tools.models.contours import Contour
from tools.models.prepared import PreparedQuery

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


# The key the current request (or task) authenticated with: ApiKey.authenticate (and the OAuth
# door) set it, tools.keys.scope.key_of reads it instead of asking the database again.
AUTHENTICATED_KEY: ContextVar[ApiKey | None] = ContextVar("authenticated_key", default=None)


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def active(self) -> ApiKeyQuerySet:
        unexpired = models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=Now())
        return self.filter(unexpired, revoked_at__isnull=True)


class ApiKey(models.Model):
    """A contour's Bearer key; only its hash and a visible prefix are stored."""

    PREFIX_LENGTH = 12

    contour = models.ForeignKey(
        Contour, models.CASCADE, verbose_name="контур", related_name="api_keys"
    )
    label = models.CharField("метка", max_length=200, blank=True)
    # The person who holds the key, when known: an editable label, so the four-eyes rule
    # (tools.pipeline.approvals.prepared_by) never rests on it alone.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="api_keys",
        verbose_name="владелец ключа",
    )
    # Who issued the key and so saw its raw secret: recorded once at issue, never edited (no
    # form shows it as a field; PROTECT: the person outlives the record). None: no person
    # (a command, scaffolding).
    issued_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        editable=False,
        related_name="+",
        verbose_name="выдал",
    )
    # Issued by a manage.py command (create_api_key, rotate_api_key, seed_demo): no person of
    # the gateway stands behind it, so no superuser may approve what it prepares (whoever ran
    # the command may be one). Set once at issue, never edited.
    issued_by_command = models.BooleanField("выдан командой", default=False, editable=False)
    prefix = models.CharField("префикс", max_length=PREFIX_LENGTH, db_index=True)
    key_hash = models.CharField("хеш ключа", max_length=64, unique=True)
    created_at = models.DateTimeField("создан", auto_now_add=True)
    revoked_at = models.DateTimeField("отозван", null=True, blank=True)
    # A key may be narrower than its contour (never wider): empty means "as the contour".
    toolsets = models.JSONField(
        "наборы ключа", default=list, blank=True, help_text="пусто — все наборы контура"
    )
    tools = models.JSONField(
        "инструменты ключа",
        default=list,
        blank=True,
        help_text="пусто — все инструменты его наборов",
    )
    expires_at = models.DateTimeField("действует до", null=True, blank=True)
    last_used_at = models.DateTimeField("последний вызов", null=True, blank=True)
    last_used_channel = models.CharField("канал последнего вызова", max_length=16, blank=True)
    last_used_address = models.GenericIPAddressField(
        "адрес последнего вызова", null=True, blank=True
    )

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        verbose_name = "ключ API"
        verbose_name_plural = "ключи API"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.contour.slug})"

    @classmethod
    def issue(
        cls,
        contour: Contour,
        label: str = "",
        user: Any = None,
        *,
        toolsets: list[str] | None = None,
        tools: list[str] | None = None,
        expires_at: datetime | None = None,
        issued_by: Any = None,
        issued_by_command: bool = False,
    ) -> tuple[ApiKey, str]:
        """Create a key and return it with the full secret, which is never stored."""
        raw = "ibg_" + secrets.token_urlsafe(32)
        key = cls.objects.create(
            contour=contour,
            label=label,
            prefix=raw[: cls.PREFIX_LENGTH],
            key_hash=sha256_hex(raw),
            user=user,
            toolsets=list(toolsets or []),
            tools=list(tools or []),
            expires_at=expires_at,
            issued_by=issued_by,
            issued_by_command=issued_by_command,
        )
        return key, raw

    def allows(self, toolset: str, tool: str) -> bool:
        """Whether this key's own scope covers the tool (the contour's is checked apart)."""
        return (not self.toolsets or toolset in self.toolsets) and (
            not self.tools or tool in self.tools
        )

    @property
    def narrowed(self) -> bool:
        return bool(self.toolsets or self.tools)

    def is_active(self, now: datetime | None = None) -> bool:
        """The rule of ApiKeyQuerySet.active(), for one key already read; `now` is the
        database's (authenticate reads it with the key)."""
        return self.revoked_at is None and (
            self.expires_at is None or self.expires_at > (now or timezone.now())
        )

    @classmethod
    def authenticate(cls, raw: str) -> ApiKey | None:
        if not raw:
            return None
        # The row is read on every call (a revoked key is refused on its next call in every
        # process); only the ORM's building of the query is done once per thread.
        return cls.accepted(_BY_HASH.first(sha256_hex(raw)))

    @staticmethod
    def read_by_hash(key_hash: str) -> ApiKeyQuerySet:
        """The key whose secret hashes to `key_hash` (unique: one row or none), its contour,
        and the database's clock read with it (`database_now`, for accepted())."""
        return (
            ApiKey.objects.select_related("contour")
            .filter(key_hash=key_hash)
            .annotate(database_now=Now())
        )

    @staticmethod
    def accepted(key: ApiKey | None) -> ApiKey | None:
        """Every key read by its secret ends here: the key if it is active by the rule of
        active(), against the database's clock read with the row (read_by_hash), else None;
        either way the request's authenticated key."""
        if key is not None and not key.is_active(key.database_now):  # type: ignore[attr-defined]
            key = None
        # The core's scope check asks for this key again in the same request: keep it at hand.
        AUTHENTICATED_KEY.set(key)
        return key

    def revoke(self) -> None:
        self.revoked_at = timezone.now()
        self.save(update_fields=["revoked_at"])


class _ReadAt(TypedDict):
    database_now: datetime  # the database's clock, read with the row


_BY_HASH: PreparedQuery[WithAnnotations[ApiKey, _ReadAt]] = PreparedQuery(
    ApiKey.read_by_hash, ["<key_hash>"]
)
