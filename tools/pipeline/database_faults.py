"""What a call is told when the gateway's own database fails under it.

Before an execution is claimed nothing was done: `database_unavailable`, repeat later. After
the claim (the attempt is recorded in flight) the upstream request may have gone out:
`outcome_unknown`, exactly as for a lost upstream answer, and the same token recovers it; the
sweep (tools/pipeline/sweep.py) resolves it by lookup meanwhile.
"""

from __future__ import annotations

from tools.errors import Outcome, ToolError

RETRY_AFTER_SECONDS = 5


def database_error(*, claimed: bool) -> ToolError:
    if claimed:
        return ToolError(
            "outcome_unknown",
            "база данных шлюза стала недоступна во время исполнения: операция могла "
            "выполниться, но её результат не записан",
            hint=(
                "не создавайте операцию заново: повторите тот же вызов с тем же "
                "confirmation_token через минуту — шлюз найдёт её по номеру счёта"
            ),
            data={"operation_state": "unknown"},
        )
    return ToolError(
        "database_unavailable",
        "база данных шлюза временно недоступна; вызов не выполнен",
        hint=f"повторите тот же вызов через {RETRY_AFTER_SECONDS} с",
        data={"retry_after_seconds": RETRY_AFTER_SECONDS},
    )


def database_outcome(*, claimed: bool) -> Outcome:
    return Outcome.from_error(database_error(claimed=claimed))
