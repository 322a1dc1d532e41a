"""Reading orders (счета): get_order and find_orders."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from invoicebox.statuses import OrderStatus
from tools.catalog.order_parts import load_order, order_row
from tools.errors import Problem, ToolError
from tools.params import Kopecks, ResponseFormat, StrictModel, Timestamp
from tools.spec import CallContext, Counted, Example, ToolSpec

if TYPE_CHECKING:
    from tools.models import Contour


class GetOrderParams(StrictModel):
    # Both given: order_id wins (the tool's description says so).
    order_id: UUID | None = None
    merchant_order_id: str | None = Field(
        None, min_length=1, max_length=256, description="Номер счёта в магазине."
    )
    response_format: ResponseFormat = Field(
        "concise", description="detailed — ещё НДС, описание, срок, ссылка и покупатель."
    )


def check_get_order(params: GetOrderParams, contour: Contour) -> list[Problem]:
    if params.order_id is None and params.merchant_order_id is None:
        return [Problem("order_id", "нужен order_id или merchant_order_id")]
    return []


def get_order(ctx: CallContext, params: GetOrderParams) -> dict[str, Any]:
    if params.order_id is not None:
        return order_row(load_order(ctx, params.order_id), params.response_format)
    number = params.merchant_order_id or ""
    page = ctx.client.find_orders(merchant_order_id=number, page_size=5)
    if not page.orders:
        raise ToolError("not_found", f"счёт с номером {number} не найден")
    if len(page.orders) > 1:
        raise ToolError(
            "precondition_failed",
            f"по номеру {number} нашлось {page.total_count} счетов",
            hint="повторите запрос с order_id одного из кандидатов",
            data={"candidates": [order_row(o, "concise") for o in page.orders]},
        )
    return order_row(page.orders[0], params.response_format)


# -- find_orders ------------------------------------------------------------------------------


class FindOrdersParams(StrictModel):
    merchant_order_id: str | None = Field(
        None, min_length=1, max_length=256, description="Номер счёта в магазине."
    )
    status: list[OrderStatus] | None = Field(
        None, max_length=6, description="created — не оплачен, completed — оплачен."
    )
    # Bounds of the creation, payment deadline and payment dates; the names say which.
    created_from: Timestamp | None = None
    created_to: Timestamp | None = None
    expiration_from: Timestamp | None = None
    expiration_to: Timestamp | None = None
    paid_from: Timestamp | None = None
    paid_to: Timestamp | None = None
    amount_from: Kopecks | None = None
    amount_to: Kopecks | None = None
    # The docs' `_ne` (api/filters.md:17): every status but one; hinted, not offered (budget).
    status_not: SkipJsonSchema[OrderStatus | None] = None
    page: int = Field(1, ge=1, le=1000)
    page_size: int = Field(20, ge=1, le=50)
    response_format: ResponseFormat = Field("concise")


def check_find_orders(params: FindOrdersParams, contour: Contour) -> list[Problem]:
    problems = []
    for name in ("created", "expiration", "paid", "amount"):
        low, high = getattr(params, f"{name}_from"), getattr(params, f"{name}_to")
        if name == "amount" and low is not None and high is not None:
            low, high = int(low), int(high)
        if low and high and low > high:
            problems.append(
                Problem(f"{name}_from", f"{name}_from позже {name}_to: пустой интервал")
            )
    return problems


def find_orders(ctx: CallContext, params: FindOrdersParams) -> dict[str, Any]:
    page = ctx.client.find_orders(
        merchant_order_id=params.merchant_order_id,
        statuses=params.status or (),
        created_from=params.created_from,
        created_to=params.created_to,
        expiration_from=params.expiration_from,
        expiration_to=params.expiration_to,
        paid_from=params.paid_from,
        paid_to=params.paid_to,
        amount_from=None if params.amount_from is None else int(params.amount_from),
        amount_to=None if params.amount_to is None else int(params.amount_to),
        status_not=params.status_not,
        page=params.page,
        page_size=params.page_size,
    )
    shown = (params.page - 1) * params.page_size + len(page.orders)
    truncated = shown < page.total_count
    result: dict[str, Any] = {
        "orders": [order_row(o, params.response_format) for o in page.orders],
        "page": params.page,
        "page_size": params.page_size,
        "total_count": page.total_count,
        "truncated": truncated,
    }
    if truncated:
        result["note"] = (
            f"показано {len(page.orders)} из {page.total_count}: уточните фильтр "
            "или запросите следующую страницу"
        )
    return result


GET_ORDER = ToolSpec(
    name="get_order",
    title="Счёт по идентификатору",
    kind="read",
    toolset="read",
    params=GetOrderParams,
    handler=get_order,
    check=check_get_order,
    description_ru=(
        "Показывает один счёт Инвойсбокс по идентификатору order_id (UUID) или по номеру "
        "магазина merchant_order_id. Если заданы оба, используется order_id. concise возвращает "
        "order_id, merchant_order_id, status, amount, amount_human, currency, created_at; "
        "detailed добавляет vat_amount, description, expiration_date, paid_at, payment_url и "
        "customer (name, vat_number). Суммы — копейки строкой. Ничего не меняет."
    ),
    success_ru="Вот данные счёта.",
    summary_ru=(
        "Счёт по order_id или merchant_order_id статус, сумма в копейках, дата. Только чтение."
    ),
    # The shop's number, not a UUID, goes to merchant_order_id: the mapping worth showing.
    examples_ru=(
        Example(
            "Покажи подробно счёт № 1042",
            {"merchant_order_id": "1042", "response_format": "detailed"},
        ),
    ),
)

FIND_ORDERS = ToolSpec(
    name="find_orders",
    title="Срез по счетам",
    kind="read",
    toolset="read",
    params=FindOrdersParams,
    handler=find_orders,
    check=check_find_orders,
    description_ru=(
        "Ищет счета магазина по номеру merchant_order_id, статусам (created — не оплачен, "
        "completed — оплачен, hold, canceled, expired, draft), датам создания created_from/"
        "created_to, срока оплаты expiration_from/expiration_to и оплаты paid_from/paid_to, "
        "сумме amount_from/amount_to (копейки), кроме статуса status_not, новые первыми. "
        "Страницы: page с 1, page_size до 50. Возвращает orders, "
        "page, page_size, total_count и truncated — признак, что показаны не все. В кратком "
        "виде данных покупателя нет. Ничего не меняет."
    ),
    summary_ru="Счета по номеру, статусам, датам и сумме, постранично. Только чтение.",
    success_ru=Counted("orders", "счёт", "счёта", "счетов", "Счетов по такому запросу нет."),
    examples_ru=(Example("Какие счета ещё не оплачены?", {"status": ["created"]}),),
)
