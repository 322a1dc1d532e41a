"""Callers with no verified credential: how the journal names them, and how often it writes them.

A refusal before any key was verified (no key, an unknown key, or any credential while the
database is away and nothing can be verified) names no key: the credential is unverified, so
the journal says `anonymous`, with at most a short keyed hash of what was presented (never the
credential, never a key's visible prefix: anyone can type a real key's prefix).

Such refusals cost the caller nothing, so they are counted (gateway_anonymous_refusals_total)
and journaled as a sample: at most one entry per door (channel and path), reason (code) and
GATEWAY_ANONYMOUS_JOURNAL_EVERY_SECONDS, per process; the entry says how many refusals since
the previous one it stands for. The others answer `journal_state: sampled`. A flood of them
during an outage therefore neither writes nor fsyncs a spool file per request.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from dataclasses import dataclass

from django.conf import settings

from tools.ops.metrics import ANONYMOUS_REFUSALS

ANONYMOUS = "anonymous"
HASH_CHARS = 12
# Doors are paths the caller chooses: past this many distinct ones, all share one window.
MAX_WINDOWS = 256
OTHER_DOOR = "*"


def actor_of_unverified(authorization: str) -> str:
    """`anonymous`, or `anonymous cred:<hash>` when a credential was presented but not verified."""
    parts = (authorization or "").split()
    credential = parts[-1] if parts else ""
    if not credential:
        return ANONYMOUS
    digest = hmac.new(
        settings.SECRET_KEY.encode(),
        b"unverified-credential:" + credential.encode("utf-8", "replace"),
        hashlib.sha256,
    ).hexdigest()[:HASH_CHARS]
    return f"{ANONYMOUS} cred:{digest}"


def is_anonymous(actor: str) -> bool:
    return actor == ANONYMOUS or actor.startswith(f"{ANONYMOUS} ")


@dataclass
class _Window:
    opened: float
    skipped: int = 0
    # Whether the window's sample is in the journal (or its spool): until then a refusal of
    # the window is journaled itself, never answered `sampled` for an entry that may be lost.
    kept: bool = False


_lock = threading.Lock()
_windows: dict[tuple[str, str, str], _Window] = {}


def admit(channel: str, door: str, code: str) -> int | None:
    """Whether to journal this refusal: None when a sample of it was journaled less than the
    period ago (it is only counted); else how many refusals were skipped since that sample."""
    ANONYMOUS_REFUSALS.labels(channel=channel, code=code).inc()
    period = float(settings.GATEWAY_ANONYMOUS_JOURNAL_EVERY_SECONDS)
    if period <= 0:
        return 0
    now = time.monotonic()
    with _lock:
        key = (channel, door, code)
        if key not in _windows and len(_windows) >= MAX_WINDOWS:
            # Expired windows go first (their skipped refusals stay counted in the metric).
            for old in [k for k, w in _windows.items() if now - w.opened >= period]:
                del _windows[old]
            if len(_windows) >= MAX_WINDOWS:
                key = (channel, OTHER_DOOR, code)
        window = _windows.get(key)
        if window is None:
            _windows[key] = _Window(opened=now)
            return 0
        if now - window.opened < period:
            if not window.kept:
                return 0  # its sample is still being written (or was lost): journal this one
            window.skipped += 1
            return None
        # A new period: the old sample stands for nothing in it, the new one is not kept yet.
        skipped, window.opened, window.skipped, window.kept = window.skipped, now, 0, False
        return skipped


def settle(channel: str, door: str, code: str, *, kept: bool, skipped: int) -> None:
    """What became of the sample admit() let through: kept (in the journal or its spool), the
    window's later refusals are only counted; kept nowhere (journal_unavailable), the window
    is closed again, the refusals it stood for still counted, and the next refusal tries the
    journal itself: none answers `sampled` for an entry that does not exist (found by the
    chaos campaign's spool scenarios, issue 39.5)."""
    with _lock:
        for key in ((channel, door, code), (channel, OTHER_DOOR, code)):
            window = _windows.get(key)
            if window is None:
                continue
            if kept:
                window.kept = True
            else:
                window.opened, window.skipped = float("-inf"), window.skipped + skipped + 1
            return


def forget() -> None:
    """Start every window afresh (a test's isolation; a process starts with none)."""
    with _lock:
        _windows.clear()
