"""The core's models, one module per concept; every name callers use is importable from here.

The endpoint facts (modes, prefixes, the official origin) and the key-hashing helpers stay
importable from here too: callers read them as facts of the Contour and ApiKey models.
"""

from tools.contours.endpoints import (
    OFFICIAL_API_ORIGIN,
    OFFICIAL_MODES,
    ApiPrefix,
    InvoiceboxMode,
    api_prefix_problem,
    base_url_problem,
)
from tools.hashing import mask_secret, sha256_hex
from tools.models.alerts import AlertKind, AlertState, AlertTransport, OperatorAlert
from tools.models.confirmations import (
    UNRESOLVED_OPERATION_STATES,
    ConfirmationStatus,
    Operation,
    OperationState,
    PendingConfirmation,
)
from tools.models.contours import (
    UNREADABLE_TOKEN_TEXT,
    Ceiling,
    CeilingKind,
    Contour,
    Toolset,
)
from tools.models.factors import PreparedDevice
from tools.models.keys import AUTHENTICATED_KEY, ApiKey, ApiKeyQuerySet
from tools.models.orders import ProcessedNotification, TrackedOrder
from tools.models.outbox import OutboxTask
from tools.models.roles import ContourRole, Role

__all__ = [
    "AUTHENTICATED_KEY",
    "OFFICIAL_API_ORIGIN",
    "OFFICIAL_MODES",
    "UNREADABLE_TOKEN_TEXT",
    "UNRESOLVED_OPERATION_STATES",
    "AlertKind",
    "AlertState",
    "AlertTransport",
    "ApiKey",
    "ApiKeyQuerySet",
    "ApiPrefix",
    "Ceiling",
    "CeilingKind",
    "ConfirmationStatus",
    "Contour",
    "ContourRole",
    "InvoiceboxMode",
    "Operation",
    "OperationState",
    "OperatorAlert",
    "OutboxTask",
    "PendingConfirmation",
    "PreparedDevice",
    "ProcessedNotification",
    "Role",
    "Toolset",
    "TrackedOrder",
    "api_prefix_problem",
    "base_url_problem",
    "mask_secret",
    "sha256_hex",
]
