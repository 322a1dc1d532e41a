"""The journal: the keys of its hash chain, its lanes and its checkpoints."""

import base64
import hashlib
import hmac
import re
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.settings.environment import GATEWAY_STATE_DIR, PRODUCTION, SECRET_KEY, env


# The journal's hash chain is an HMAC-SHA256 keyed outside the database, so that whoever can
# write the database cannot recompute it: "kid1:secret1,kid2:secret2" (a kid is letters,
# digits, "._-"; the secret is everything after the first ":" and holds no comma). The first
# key signs new entries; every listed key still verifies the entries it signed (rotation:
# put the new key first, keep the old ones).
def _journal_keys(raw: str) -> dict[str, str]:
    keys: dict[str, str] = {}
    for number, item in enumerate((part.strip() for part in raw.split(",")), start=1):
        kid, sep, secret = item.partition(":")
        kid = kid.strip()
        # The message names the item by position: a malformed item may be a bare secret.
        if not sep or not re.fullmatch(r"[A-Za-z0-9._-]{1,32}", kid):
            raise ImproperlyConfigured(
                f"GATEWAY_JOURNAL_KEYS: элемент {number} не вида kid:secret (каждый элемент — kid:secret, "
                "kid — от 1 до 32 латинских букв, цифр и '._-')"
            )
        if kid in keys:
            raise ImproperlyConfigured(
                f"GATEWAY_JOURNAL_KEYS: идентификатор ключа {kid!r} встречается дважды"
            )
        if len(secret) < 32:
            raise ImproperlyConfigured(
                f"GATEWAY_JOURNAL_KEYS: в секрете ключа {kid!r} {len(secret)} симв., нужно не "
                "меньше 32"
            )
        keys[kid] = secret
    return keys


_JOURNAL_KEYS_RAW = env.str("GATEWAY_JOURNAL_KEYS", default="")
if _JOURNAL_KEYS_RAW.strip():
    GATEWAY_JOURNAL_KEYS = _journal_keys(_JOURNAL_KEYS_RAW)
elif PRODUCTION:
    raise ImproperlyConfigured(
        "при GATEWAY_ENV=production нужен GATEWAY_JOURNAL_KEYS (kid:secret, см. docs/production.md): "
        "ключ HMAC журнала не должен выводиться из данных базы"
    )
else:
    # The embedded demo: a key derived from SECRET_KEY, so nothing needs configuring.
    GATEWAY_JOURNAL_KEYS = {
        "dev": hmac.new(SECRET_KEY.encode(), b"audit.journal-chain", hashlib.sha256).hexdigest()
    }
# Entries written before the chain was keyed carry no key id and a plain sha256 link. They are
# accepted only up to this id (outside the database, so a rewrite cannot widen it); 0 = none.
GATEWAY_JOURNAL_LEGACY_LAST_ID = env.int("GATEWAY_JOURNAL_LEGACY_LAST_ID", default=0)
# Parallel hash chains ("lanes") per contour on PostgreSQL: a writer takes a lane no one holds
# (SKIP LOCKED), so up to this many calls of one contour journal at once without waiting. As
# many as the calls one worker runs at once (GATEWAY_SYNC_THREADS): with 8, two workers under
# 32 clients had 0.17 sessions waiting on a head on average (benchmarks/README.md).
GATEWAY_JOURNAL_LANES = env.int("GATEWAY_JOURNAL_LANES", default=32)
# PostgreSQL: the journal's month partitions are made this many months ahead of the current one
# (by the migration, the daily beat task and archive_journal; audit/partitions.py).
GATEWAY_JOURNAL_PARTITIONS_AHEAD = env.int("GATEWAY_JOURNAL_PARTITIONS_AHEAD", default=3)
# Where the beat task writes journal checkpoints, one new file each time (never overwritten).
# Ship them off this host (docs/production.md): a checkpoint is only an anchor where the
# database's writer cannot reach it.
GATEWAY_JOURNAL_CHECKPOINT_DIR = env.str(
    "GATEWAY_JOURNAL_CHECKPOINT_DIR", default=str(Path(GATEWAY_STATE_DIR) / "journal-checkpoints")
)
# The journal's spool (audit/spool.py) holds entries while the database is away. Below this
# much free space on its disk /health says degraded and the metric
# gateway_journal_spool_free_bytes warns (docs/production.md): act before it is full, when a
# call whose entry no place can keep is refused with journal_unavailable.
GATEWAY_SPOOL_MIN_FREE_MB = env.int("GATEWAY_SPOOL_MIN_FREE_MB", default=256)
# Refusals of callers with no verified credential (no key, an unknown key, any credential while
# the database is away) are counted in gateway_anonymous_refusals_total and journaled at most
# once per this many seconds per door and reason, the entry saying how many it stands for
# (audit/sampling.py): an anonymous flood neither fills the journal nor fsyncs the spool.
GATEWAY_ANONYMOUS_JOURNAL_EVERY_SECONDS = env.int(
    "GATEWAY_ANONYMOUS_JOURNAL_EVERY_SECONDS", default=10
)
# Signed checkpoints (audit/seals.py): an Ed25519 private key, PEM or the 32 raw bytes in base64.
# Its public key (`manage.py journal_public_key`) lets an auditor verify an export offline
# (tools/verify_export.py) without the HMAC keys. Rotation: set the new key; every checkpoint
# names the key that signed it, so auditors keep the old public keys to verify older ones.
GATEWAY_JOURNAL_SIGNING_KEY = env.str("GATEWAY_JOURNAL_SIGNING_KEY", default="").replace(
    "\\n", "\n"
)
if not GATEWAY_JOURNAL_SIGNING_KEY.strip():
    if PRODUCTION:
        raise ImproperlyConfigured(
            "при GATEWAY_ENV=production нужен GATEWAY_JOURNAL_SIGNING_KEY (закрытый ключ Ed25519, "
            "см. docs/production.md): им подписываются контрольные точки журнала"
        )
    # The embedded demo: a key derived from SECRET_KEY (raw 32 bytes, base64).
    GATEWAY_JOURNAL_SIGNING_KEY = base64.b64encode(
        hashlib.sha256(b"audit.journal-signing:" + SECRET_KEY.encode()).digest()
    ).decode()
# Where each new signed checkpoint is also sent, out of the operator's reach: auditors' e-mail
# addresses (comma-separated) and/or a URL that receives them as JSON Lines (POST).
GATEWAY_JOURNAL_CHECKPOINT_EMAILS = env.list("GATEWAY_JOURNAL_CHECKPOINT_EMAILS", default=[])
GATEWAY_JOURNAL_CHECKPOINT_WEBHOOK = env.str("GATEWAY_JOURNAL_CHECKPOINT_WEBHOOK", default="")
