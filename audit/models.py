"""The journal tables: append-only entries, hash-chained per contour, and one head per chain."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any, NoReturn

from django.conf import settings
from django.db import models
from django.utils import timezone

ZERO_HASH = "0" * 64
# A journal row's fields as the chain reads them (audit.journal.canonical) with its links: what
# a seal covers, an export carries (audit/export.py adds the spool's marks) and a fill writes.
ROW_FIELDS: tuple[str, ...] = (
    "id",
    "at",
    "contour",
    "channel",
    "actor",
    "tool",
    "phase",
    "arguments",
    "status",
    "code",
    "message",
    "confirmation_id",
    "operation_key",
    "upstream_request_id",
    "upstream_status",
    "duration_ms",
    "key_id",
    "chain",
    "seq",
    "form",
    "prev_hash",
    "hash",
)


class AppendOnlyError(RuntimeError):
    """Raised on any attempt to change or remove a journal entry through the ORM."""


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise AppendOnlyError("журнал только дополняется: записи нельзя менять или удалять")


class JournalQuerySet(models.QuerySet["JournalEntry"]):
    """Refuses bulk changes; the only way in is audit.journal.record()."""

    def update(self, **kwargs: Any) -> NoReturn:
        _refuse()

    def delete(self) -> NoReturn:
        _refuse()

    def bulk_update(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse()


class Channel(models.TextChoices):
    """Where a call or change came in. audit.journal.record() refuses any other value; the
    column has no choices, so a new protocol adds a member here and needs no migration."""

    REST = "rest", "REST API"
    MCP_HTTP = "mcp-http", "MCP (HTTP)"
    MCP_STDIO = "mcp-stdio", "MCP (stdio)"
    GIGACHAT = "gigachat", "GigaChat"
    YANDEXGPT = "yandexgpt", "YandexGPT"
    OPENAI = "openai", "OpenAI"
    TEXT = "text", "текстовые теги"
    UI = "ui", "интерфейс оператора"
    ADMIN = "admin", "админка"
    CLI = "cli", "командная строка"
    CELERY = "celery", "Celery"
    WEBHOOK = "webhook", "вебхук"
    OAUTH = "oauth", "OAuth"


class Phase(models.TextChoices):
    CALL = "call", "вызов (отклонён до фазы)"
    READ = "read", "чтение"
    PREPARE = "prepare", "подготовка"
    EXECUTE = "execute", "исполнение"
    APPROVE = "approve", "одобрение"
    REJECT = "reject", "отклонение"
    NOTIFY = "notify", "уведомление"
    CONFIGURE = "configure", "настройка"
    LOGIN = "login", "вход человека"


class Status(models.TextChoices):
    OK = "ok", "успешно"
    # An execution's attempt, journaled before its upstream request; its outcome follows.
    STARTED = "started", "начато"
    CONFIRMATION_REQUIRED = "confirmation_required", "нужно подтверждение"
    AWAITING_APPROVAL = "awaiting_approval", "ждёт одобрения"
    REJECTED = "rejected", "отклонено"
    ERROR = "error", "ошибка"


class JournalEntry(models.Model):
    """One call outcome. Written only by audit.journal.record(); never changed afterwards.

    The Python guards below (save() of an existing row, delete(), the queryset's
    update()/delete()) only stop honest mistakes. The real protection is the read-only admin,
    a database role without UPDATE/DELETE on this table in production, and the HMAC chain that
    `manage.py verify_journal` checks against the keys and checkpoints kept outside it.
    """

    id = models.BigAutoField(primary_key=True)
    at = models.DateTimeField("время")
    # A slug rather than a foreign key: the audit app depends on nothing else in the project,
    # and an entry must outlive the contour it names.
    contour = models.SlugField("контур", max_length=64, blank=True, db_index=False)
    channel = models.CharField("канал", max_length=16)
    actor = models.CharField("кто", max_length=150, blank=True)
    tool = models.CharField("инструмент", max_length=100, blank=True)
    phase = models.CharField("фаза", max_length=16, choices=Phase.choices)
    arguments = models.JSONField("аргументы (без секретов)", default=dict, blank=True)
    status = models.CharField("итог", max_length=32, choices=Status.choices)
    code = models.CharField("код", max_length=64, blank=True)
    message = models.TextField("сообщение", blank=True)
    confirmation_id = models.CharField("подтверждение", max_length=64, blank=True)
    operation_key = models.CharField("ключ операции", max_length=128, blank=True)
    upstream_request_id = models.CharField("запрос API", max_length=128, blank=True)
    upstream_status = models.PositiveSmallIntegerField("HTTP-статус API", null=True, blank=True)
    duration_ms = models.PositiveIntegerField("длительность, мс", default=0)
    # Which GATEWAY_JOURNAL_KEYS key made `hash` (an HMAC); empty on entries from before the
    # chain was keyed, whose hash is plain sha256 (accepted up to GATEWAY_JOURNAL_LEGACY_LAST_ID).
    key_id = models.CharField("ключ подписи", max_length=32, blank=True, default="", db_default="")
    # The chain the entry links into: its contour's slug, or a lane of it ("shop~2"); "" for
    # entries of no contour and every entry from the one global chain; and its place in it.
    chain = models.CharField("цепочка", max_length=80, blank=True, default="", db_default="")
    seq = models.BigIntegerField("номер в цепочке")
    # 1: one global chain, the id in the hashed form; 2: per-contour chains, chain and seq in it.
    form = models.PositiveSmallIntegerField("форма", default=2, db_default=1)
    prev_hash = models.CharField("предыдущий хеш", max_length=64)
    # Unique through a named constraint, not unique=True: on PostgreSQL the latter adds a
    # varchar_pattern_ops ("_like") index that no query of a hash needs.
    hash = models.CharField("хеш", max_length=64)
    # The spool's own marks (audit/spool.py), never a caller's: the spool id the answer gave
    # (journal_pending), when the call was answered, and the committed entry a spooled copy
    # repeats. Outside `arguments`, which callers write; hashed when set (journal.canonical).
    spool_id = models.CharField(
        "номер в очереди", max_length=32, blank=True, default="", db_default=""
    )
    spooled_at = models.DateTimeField("ответ дан (очередь)", null=True, blank=True)
    duplicate_of = models.BigIntegerField("копия записи", null=True, blank=True)

    objects = JournalQuerySet.as_manager()

    class Meta:
        verbose_name = "запись журнала"
        verbose_name_plural = "журнал"
        indexes = [
            models.Index(fields=["contour", "at"], name="audit_entry_contour_at"),
            models.Index(fields=["at"], name="audit_entry_at"),
            models.Index(fields=["tool"], name="audit_entry_tool"),
            models.Index(fields=["status"], name="audit_entry_status"),
            models.Index(fields=["channel"], name="audit_entry_channel"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["chain", "seq"], name="audit_entry_chain_seq"),
            models.UniqueConstraint(fields=["hash"], name="audit_entry_hash"),
            # One drained entry per spool file, whoever drains it.
            models.UniqueConstraint(
                fields=["spool_id"], condition=~models.Q(spool_id=""), name="audit_entry_spool_id"
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.id} {self.tool or '-'} {self.phase} {self.status}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding or kwargs.get("force_update") or kwargs.get("update_fields"):
            _refuse()
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse()


class ChainHead(models.Model):
    """One row per chain naming its last entry; locking it serializes that chain's appends only."""

    chain = models.CharField(max_length=80, primary_key=True, blank=True)
    last_seq = models.BigIntegerField(default=0)
    last_id = models.BigIntegerField(default=0)
    last_hash = models.CharField(max_length=64, default=ZERO_HASH)

    class Meta:
        verbose_name = "вершина цепочки журнала"

    def __str__(self) -> str:
        return f"head {self.chain or '-'} #{self.last_seq}"


def _sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


class AuditorTokenQuerySet(models.QuerySet["AuditorToken"]):
    def active(self) -> AuditorTokenQuerySet:
        return self.filter(revoked_at__isnull=True)


class AuditorToken(models.Model):
    """A Bearer token for journal export by an auditor; only its hash and prefix are stored.

    It acts as its user: when the user leaves the auditors group or is deactivated, the token
    stops working too.
    """

    PREFIX_LENGTH = 12

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="auditor_tokens",
        verbose_name="аудитор",
    )
    label = models.CharField("метка", max_length=200, blank=True)
    prefix = models.CharField("префикс", max_length=PREFIX_LENGTH, db_index=True)
    token_hash = models.CharField("хеш токена", max_length=64, unique=True)
    created_at = models.DateTimeField("создан", auto_now_add=True)
    revoked_at = models.DateTimeField("отозван", null=True, blank=True)
    # The contour slugs the token may read (always within what its user audits now); null
    # for tokens issued before tokens named contours: they follow the user's roles.
    contours = models.JSONField("контуры", null=True, blank=True)

    objects = AuditorTokenQuerySet.as_manager()

    class Meta:
        verbose_name = "токен аудитора"
        verbose_name_plural = "токены аудиторов"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @classmethod
    def issue(
        cls, user: Any, label: str = "", contours: list[str] | None = None
    ) -> tuple[AuditorToken, str]:
        """Create a token and return it with the full secret, which is never stored."""
        raw = "iba_" + secrets.token_urlsafe(32)
        token = cls.objects.create(
            user=user,
            label=label,
            prefix=raw[: cls.PREFIX_LENGTH],
            token_hash=_sha256(raw),
            contours=contours,
        )
        return token, raw

    @classmethod
    def authenticate(cls, raw: str) -> AuditorToken | None:
        if not raw:
            return None
        return cls.objects.active().select_related("user").filter(token_hash=_sha256(raw)).first()

    def revoke(self) -> None:
        self.revoked_at = timezone.now()
        self.save(update_fields=["revoked_at"])


class SignedCheckpoint(models.Model):
    """A stretch of one chain (places from_seq..to_seq) sealed with the journal's Ed25519 key.

    `digest` is a SHA-256 chain over the stretch's rows (their canonical content and hashes,
    audit/seals.py), so whoever holds the public key can verify an export of those rows
    without the HMAC secret (tools/verify_export.py). Written by the beat; sent out of the
    operator's reach as it is written.
    """

    chain = models.CharField("цепочка", max_length=80, blank=True)
    from_seq = models.BigIntegerField("с места")
    to_seq = models.BigIntegerField("по место")
    prev_hash = models.CharField("хеш перед отрезком", max_length=64)
    last_hash = models.CharField("хеш последней записи", max_length=64)
    last_id = models.BigIntegerField("последняя запись")
    digest = models.CharField("дайджест отрезка", max_length=64)
    first_at = models.DateTimeField("первая запись в")
    last_at = models.DateTimeField("последняя запись в")
    at = models.DateTimeField("подписан")
    key = models.CharField("отпечаток ключа", max_length=16)
    public_key = models.CharField("открытый ключ (base64)", max_length=64)
    signature = models.CharField("подпись (base64)", max_length=128)
    # Set when `manage.py archive_journal` moved the stretch's rows to a verified archive file
    # and removed them: the chain walk then starts after the stretch (audit/walk.py).
    archived_at = models.DateTimeField("перенесён в архив", null=True, blank=True)
    archive = models.CharField(
        "архив (файл и sha256)", max_length=400, blank=True, default="", db_default=""
    )

    class Meta:
        verbose_name = "подписанная контрольная точка"
        verbose_name_plural = "подписанные контрольные точки"
        constraints = [
            models.UniqueConstraint(fields=["chain", "to_seq"], name="audit_sealed_chain_to_seq")
        ]
        indexes = [models.Index(fields=["chain", "last_at"], name="audit_sealed_chain_last_at")]

    def __str__(self) -> str:
        return f"{self.chain or '-'} {self.from_seq}..{self.to_seq}"
