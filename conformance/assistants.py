"""Targets gigachat, gigachat-v2, yandexgpt, yandexgpt-openai, hermes and one per platform that
declares an `OpenAISdk` (openai, ...): a scripted Russian conversation through the platform's
official SDK (or LocalLoop), every call the model makes executed by the gateway's own endpoints
(adapters/functions/loop.py, LocalLoop)."""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.utils import timezone

from adapters.functions import loop
from adapters.functions.formats import PLATFORMS
from adapters.functions.platform import Platform
from adapters.text.local_loop import LocalLoop
from conformance.gateway import GatewayLink, KitError
from conformance.report import Report

ASK = (
    "Покажи мои неоплаченные счета. Потом выставь ООО «Проверка» (ИНН 7710044140) счёт: "
    "одна услуга «Проверка совместимости», 1 шт, 10,00 ₽ без НДС (VATNONE), код единицы 796, "
    "срок оплаты — {expires}. Сумма в копейках: 1000."
)
AGREE = "Да, подтверждаю: выставляй этот счёт."
# GigaChat counts the function block against a 4096-token cap.
GIGACHAT_FUNCTION_BUDGET = 4096


@dataclass
class Exchange:
    """What one user turn produced: the model's text answer and the gateway's envelopes."""

    answer: str | None
    outcomes: list[dict[str, Any]]
    messages: list[Any] = field(default_factory=list)


Converse = Callable[[list[Any]], Exchange]

# Targets driven by the openai SDK alone, named by their platform's slug.
OPENAI_SDK_TARGETS: dict[str, Platform] = {
    platform.slug: platform for platform in PLATFORMS if platform.openai_sdk is not None
}


INSTALL = 'pip install -e ".[conformance]"'


def sdk(module: str, package: str) -> Any:
    """The platform's SDK, or a failure naming what to install (`make demo` installs none)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        raise KitError(
            f"не установлен SDK {package}: {INSTALL} (SDK всех платформ набора проверки)"
        ) from None


def need(*names: str) -> str:
    """The first of the variables that is set; else a failure naming them."""
    for name in names:
        if os.environ.get(name):
            return os.environ[name]
    raise KitError(f"не задана переменная окружения {' или '.join(names)}")


# -- each platform's client, from its own SDK's environment variables --------------------------


def gigachat(
    link: GatewayLink, report: Report, contract: str
) -> tuple[Converse, Callable[[str], Any]]:
    need("GIGACHAT_CREDENTIALS", "GIGACHAT_ACCESS_TOKEN", "GIGACHAT_USER")
    model = os.environ.get("GIGACHAT_MODEL", "GigaChat")
    # The SDK reads GIGACHAT_* itself (base URL, scope, TLS).
    client = sdk("gigachat", "gigachat").GigaChat(model=model)
    report.platform = {"sdk": "gigachat", "model": model, "contract": contract}

    def converse(history: list[Any]) -> Exchange:
        turn = loop.gigachat_turn(
            client, history, gateway_url=link.url, api_key=link.key, contract=contract, model=model
        )
        return Exchange(turn.answer, turn.outcomes, turn.messages)

    def user(text: str) -> Any:
        return {"role": "user", "content": [{"text": text}] if contract == "v2" else text}

    _count_function_tokens(client, link, report, model, contract)
    return converse, user


def _count_function_tokens(
    client: Any, link: GatewayLink, report: Report, model: str, contract: str
) -> None:
    """The API's own token count of the exported block, against GigaChat's cap."""
    with link.http() as http:
        block = http.get(
            "/api/v1/tools", params={"format": "gigachat-v2" if contract == "v2" else "gigachat"}
        ).json()
    text = json.dumps(block, ensure_ascii=False)
    try:
        counted = client.tokens_count([text], model=model)[0].tokens
    except Exception as error:  # the endpoint's refusal is the finding
        report.add("function block tokens", False, f"tokens/count: {error}")
        return
    report.add(
        "function block tokens",
        counted <= GIGACHAT_FUNCTION_BUDGET,
        f"{counted} токенов из {GIGACHAT_FUNCTION_BUDGET} ({len(text)} символов, "
        f"{len(text) / max(counted, 1):.2f} символа на токен)",
    )


def yandexgpt(link: GatewayLink, report: Report) -> tuple[Converse, Callable[[str], Any]]:
    folder = need("YC_FOLDER_ID")
    key = need("YC_API_KEY")
    studio = sdk("yandex_ai_studio_sdk", "yandex-ai-studio-sdk")
    auth = sdk("yandex_ai_studio_sdk.auth", "yandex-ai-studio-sdk")
    model = os.environ.get("YANDEXGPT_MODEL", "yandexgpt")
    # A local gRPC double (tests) stands in for the service; live runs leave it unset.
    double = os.environ.get("CONFORMANCE_YANDEX_GRPC", "")
    extra: dict[str, Any] = {}
    if double:
        if not double.startswith("127.0.0.1:"):
            raise KitError("CONFORMANCE_YANDEX_GRPC принимает только 127.0.0.1:порт")
        extra = {"endpoint": None, "verify": False, "service_map": {"ai-foundation-models": double}}
    client = studio.AIStudio(folder_id=folder, auth=auth.APIKeyAuth(key), **extra)
    report.platform = {"sdk": "yandex-ai-studio-sdk", "model": model}

    def converse(history: list[Any]) -> Exchange:
        turn = loop.yandexgpt_turn(
            client, history, gateway_url=link.url, api_key=link.key, model=model
        )
        return Exchange(turn.answer, turn.outcomes, turn.messages)

    return converse, lambda text: {"role": "user", "text": text}


def yandexgpt_openai(
    link: GatewayLink, report: Report, model_option: str
) -> tuple[Converse, Callable[[str], Any]]:
    folder = need("YC_FOLDER_ID")
    key = need("YC_API_KEY")
    # Yandex wants an API key (not an IAM token), the folder as the project, a gpt:// URI.
    client = sdk("openai", "openai").OpenAI(
        api_key=key,
        project=folder,
        max_retries=0,
        base_url=os.environ.get("YANDEX_OPENAI_BASE_URL", "https://llm.api.cloud.yandex.net/v1"),
    )
    model = model_option or f"gpt://{folder}/yandexgpt/latest"
    return _openai_converse(link, report, client, model, "yandexgpt-openai", "openai")


def openai_sdk(
    link: GatewayLink, report: Report, platform: Platform, model_option: str
) -> tuple[Converse, Callable[[str], Any]]:
    """Any platform that declares an `OpenAISdk`: its own variables, its first format, its own
    call endpoint."""
    target = platform.openai_sdk
    assert target is not None, platform.slug
    key = need(target.key_variable)
    client = sdk("openai", "openai").OpenAI(
        api_key=key,
        max_retries=0,
        base_url=os.environ.get(target.base_url_variable) or target.base_url,
    )
    model = model_option or need(target.model_variable)
    return _openai_converse(link, report, client, model, platform.default_format, platform.slug)


def _openai_converse(
    link: GatewayLink, report: Report, client: Any, model: str, fmt: str, platform: str
) -> tuple[Converse, Callable[[str], Any]]:
    report.platform = {"sdk": "openai", "model": model, "format": fmt}

    def converse(history: list[Any]) -> Exchange:
        turn = loop.openai_turn(
            client,
            history,
            model=model,
            gateway_url=link.url,
            api_key=link.key,
            fmt=fmt,
            platform=platform,
        )
        return Exchange(turn.answer, turn.outcomes, turn.messages)

    return converse, lambda text: {"role": "user", "content": text}


def hermes(
    link: GatewayLink, report: Report, model_url: str, model: str
) -> tuple[Converse, Callable[[str], Any]]:
    if not model_url or not model:
        raise KitError("hermes: укажите --model-url (OpenAI-совместимый сервер) и --model")
    local = LocalLoop(
        model_url=model_url,
        model=model,
        gateway_url=link.url,
        gateway_key=link.key,
        model_key=os.environ.get("HERMES_API_KEY", ""),
    )
    report.platform = {"server": model_url, "model": model}
    state: dict[str, Any] = {"messages": []}

    def converse(history: list[Any]) -> Exchange:
        text = history[-1]
        result = local.resume(state["messages"], text) if state["messages"] else local.start(text)
        state["messages"] = result.messages
        outcomes = [envelope for exchange in result.exchanges for envelope in exchange["results"]]
        return Exchange(
            result.answer if result.stopped == "answer" else _last_text(result.messages), outcomes
        )

    return converse, lambda text: text


def _last_text(messages: list[dict[str, str]]) -> str | None:
    replies = [m["content"] for m in messages if m.get("role") == "assistant"]
    return replies[-1] if replies else None


# -- the conversation and its checks -----------------------------------------------------------


def outcomes_of(exchange: Exchange, tool_status: str) -> list[dict[str, Any]]:
    return [o for o in exchange.outcomes if o.get("status") == tool_status]


def created_ids(exchange: Exchange) -> set[str]:
    return {
        o["data"]["order_id"]
        for o in outcomes_of(exchange, "ok")
        if isinstance(o.get("data"), dict)
        and "order_id" in o["data"]
        and "payment_url" in o["data"]
    }


def converse_and_check(
    report: Report, link: GatewayLink, converse: Converse, user: Callable[[str], Any]
) -> None:
    started = timezone.now().replace(microsecond=0)
    expires = (started + timedelta(days=1)).isoformat()
    history: list[Any] = [user(ASK.format(expires=expires))]
    first = converse(history)
    listed = [
        o for o in first.outcomes if o.get("status") == "ok" and "orders" in (o.get("data") or {})
    ]
    report.add(
        "model calls find_orders",
        bool(listed),
        f"вызовы: {[o.get('code') for o in first.outcomes]}",
        secrets=[link.key],
    )
    waiting = outcomes_of(first, "confirmation_required")
    stopped = report.add(
        "create_order stops at the confirmation",
        bool(waiting) and not created_ids(first),
        f"статусы: {[o.get('status') for o in first.outcomes]}",
        secrets=[link.key],
    )
    report.add(
        "answer is text",
        isinstance(first.answer, str) and bool(first.answer.strip()),
        (first.answer or "")[:200],
        secrets=[link.key],
    )
    if not stopped:
        return
    history += [*first.messages, user(AGREE)]
    second = converse(history)
    ids = created_ids(second)
    report.add(
        "confirmed create_order is ok",
        len(ids) == 1,
        f"статусы: {[o.get('status') for o in second.outcomes]}",
        secrets=[link.key],
    )
    report.add(
        "final answer is text",
        isinstance(second.answer, str) and bool(second.answer.strip()),
        (second.answer or "")[:200],
        secrets=[link.key],
    )
    with link.http() as http:
        since = link.call(
            http, "find_orders", {"created_from": started.isoformat(), "page_size": 50}
        )
    made = [o["order_id"] for o in (since.get("data") or {}).get("orders") or []]
    report.add(
        "exactly one order exists",
        len(made) == 1 and set(made) == ids,
        f"счета с начала проверки: {len(made)}",
        secrets=[link.key],
    )
