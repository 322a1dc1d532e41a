"""An MCP session's initialize facts, shared by every worker (adapters/mcp/sessions.py)."""

from django.db import models

from tools.models import ApiKey


class McpSession(models.Model):
    """What a 2025-11-25 session negotiated, so that another process can answer it as is."""

    session_id = models.CharField("сессия", max_length=64, primary_key=True)
    # The key that opened it: another key is answered as if the session did not exist, and a
    # revoked (or deleted) key ends it.
    key = models.ForeignKey(
        ApiKey, models.CASCADE, related_name="mcp_sessions", verbose_name="ключ API"
    )
    protocol_version = models.CharField("версия протокола", max_length=32)
    # The initialize params as the client sent them: capabilities, clientInfo.
    client_params = models.JSONField("параметры клиента")
    opened_at = models.DateTimeField("открыта", auto_now_add=True)
    last_seen = models.DateTimeField("последний запрос", db_index=True)
    # Whether the client made a request after initialize: a session that never did (a probe,
    # an abandoned handshake) expires after MCP_SESSION_UNUSED_SECONDS, not the idle timeout.
    used = models.BooleanField("были вызовы", default=False)

    class Meta:
        verbose_name = "сессия MCP"
        verbose_name_plural = "сессии MCP"
        indexes = [
            # A key's live sessions counted, and its least recently used one found, by index.
            models.Index(fields=["key", "last_seen"], name="mcp_session_key_seen"),
            # The beat's expiry of never-used sessions reads only them.
            models.Index(
                fields=["last_seen"], condition=models.Q(used=False), name="mcp_session_unused_seen"
            ),
        ]

    def __str__(self) -> str:
        return self.session_id
