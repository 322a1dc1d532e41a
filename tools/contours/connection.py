"""Checking a contour's connection to Invoicebox: the token, the shop it sees, one read.

One service behind `manage.py check_contour` and the admin's «Проверить подключение», so a
merchant going from the demo to a real shop learns what is wrong before the first tool call
fails with `upstream_unavailable`. It only reads (the documented token check and one page of
orders); it never writes upstream, never shows the token, and reports in Russian.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.conf import settings

from invoicebox.client import InvoiceboxError, is_local_sandbox
from tools.contours import api_tokens
from tools.models import UNREADABLE_TOKEN_TEXT, Contour
from tools.pipeline.upstream_calls import contour_client

# Инвойсбокс.Бизнес (business.invoicebox.ru) issues `/l3/` tokens like `29078-API:<hex>`
# (docs api/auth.md); this gateway speaks `/v3/` only (docs/invoicebox-api.md).
L3_TOKEN = re.compile(r"^\d+-API:", re.I)
CABINET = (
    "личный кабинет Инвойсбокс → «Мои продажи» → «Мои магазины» → магазин → вкладка "
    "«Интеграция (API)»"
)

_WHY: dict[str, str] = {
    "unauthorized": f"Инвойсбокс не принял токен. Скопируйте токен API заново: {CABINET}",
    "forbidden": "Инвойсбокс принял токен, но не дал читать счета: у токена нет прав на этот "
    "магазин, проверьте идентификатор магазина и токен в кабинете",
    "not_found": "по адресу API нет такого метода: адрес указывает не на API Инвойсбокс v3",
    "rate_limited": "Инвойсбокс просит подождать (слишком много запросов): повторите проверку "
    "через минуту",
    "unavailable": "Инвойсбокс не ответил: нет связи с адресом API или сервис недоступен; "
    "проверьте адрес и выход в интернет с сервера шлюза",
    "bad_response": "по адресу API отвечает не Инвойсбокс (ответ не похож на API v3): "
    "проверьте адрес",
    "unknown_outcome": "ответ Инвойсбокс не прочитан: проверьте адрес API",
}


@dataclass(frozen=True)
class Step:
    """One stage of the check: `ok` None means it could not be judged (not a failure)."""

    title: str
    ok: bool | None
    message: str


@dataclass
class ConnectionReport:
    contour: str
    base_url: str
    answered_by: str = ""
    steps: list[Step] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(step.ok is not False for step in self.steps)

    @property
    def summary(self) -> str:
        if self.ok:
            return f"Подключение контура {self.contour} работает"
        failed = next(step for step in self.steps if step.ok is False)
        return f"Подключение контура {self.contour} не работает: {failed.message}"

    def lines(self) -> list[str]:
        marks = {True: "да", False: "НЕТ", None: "?"}
        return [f"[{marks[step.ok]}] {step.title}: {step.message}" for step in self.steps]


def _upstream_failure(error: InvoiceboxError) -> str:
    if error.code in ("token_missing", "address_not_public"):
        return error.message
    why = _WHY.get(error.kind, error.message)
    return f"{why} (HTTP {error.http_status})" if error.http_status else why


def token_problem(token: str) -> str:
    """Why a token can't be an Invoicebox v3 API token, or "" (its value is never shown)."""
    if not token:
        return f"токен не задан: впишите токен API из кабинета ({CABINET})"
    if L3_TOKEN.match(token):
        return (
            "это токен API l3 (кабинет business.invoicebox.ru, вид «12345-API:…»); шлюз "
            "работает с API v3: нужен токен из 32 шестнадцатеричных знаков, как у "
            "демо-магазина"
        )
    return api_tokens.shape_problem(token)


def answered_by(base_url: str) -> str:
    """Which server a contour's calls reach, for a person (`check_contour`, the admin)."""
    if settings.INVOICEBOX_SANDBOX_IN_PROCESS and is_local_sandbox(base_url):
        return "встроенная песочница этого процесса шлюза (без сети)"
    return f"сервер по адресу {base_url} (по сети)"


# The check that follows a save in the admin waits this long, once, not the calls' budget.
QUICK_TIMEOUT_SECONDS = 10.0


def check_connection(contour: Contour, *, quick: bool = False) -> ConnectionReport:
    """Token shape, then auth, then one page of orders and the shop they belong to.
    `quick`: one attempt with a short timeout (the check after a save)."""
    report = ConnectionReport(
        contour=contour.slug, base_url=contour.base_url, answered_by=answered_by(contour.base_url)
    )
    if contour.token_unreadable:
        report.steps.append(
            Step(
                "токен",
                False,
                f"{UNREADABLE_TOKEN_TEXT}: он зашифрован "
                "другим ключом GATEWAY_SECRETS_KEY (manage.py "
                "set_contour_token или страница контура в админке)",
            )
        )
        return report
    problem = token_problem(contour.api_token)
    if problem:
        report.steps.append(Step("токен", False, problem))
        return report
    # No shop scope on this read: it asks which shop the token itself sees, to compare it with
    # the contour's (a list scoped to the contour's shop would just come back empty).
    with contour_client(
        contour,
        merchant_id="",
        timeout=QUICK_TIMEOUT_SECONDS if quick else None,
        read_attempts=1 if quick else None,
    ) as client:
        try:
            user_id = client.check_auth()
        except InvoiceboxError as error:
            report.steps.append(Step("токен", False, _upstream_failure(error)))
            return report
        report.steps.append(Step("токен", True, f"принят, пользователь Инвойсбокс {user_id}"))
        try:
            page = client.find_orders(page_size=1)
        except InvoiceboxError as error:
            report.steps.append(Step("чтение счетов", False, _upstream_failure(error)))
            return report
    report.steps.append(
        Step("чтение счетов", True, f"работает, счетов у магазина: {page.total_count}")
    )
    report.steps.append(
        _merchant_step(contour, page.orders[0].merchant_id if page.orders else None)
    )
    return report


def _merchant_step(contour: Contour, seen: str | None) -> Step:
    title = "магазин"
    if seen is None:
        return Step(
            title,
            None,
            "счетов ещё нет (или ответ не назвал магазин), поэтому магазин "
            "токена не сверить: убедитесь, что "
            f"идентификатор {contour.merchant_id} — из той же вкладки "
            "«Интеграция (API)», что и токен",
        )
    if seen.lower() != contour.merchant_id.lower():
        return Step(
            title,
            False,
            f"токен видит магазин {seen}, а в контуре указан "
            f"{contour.merchant_id}: счета создавались бы не там; "
            "исправьте идентификатор магазина",
        )
    return Step(title, True, f"{seen}, как указано в контуре")
