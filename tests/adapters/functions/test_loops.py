"""Full assistant turns: each official SDK talks to a scripted local stub of its provider, our
definitions go in, the scripted call runs through our endpoint against the sandbox, and the
result goes back to the provider through the SDK in that platform's shape."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from gigachat import GigaChat
from openai import OpenAI
from yandex_ai_studio_sdk import AIStudio
from yandex_ai_studio_sdk.auth import APIKeyAuth

from adapters.functions import loop
from tests.adapters.functions.conftest import definitions
from tests.adapters.functions.stubs import HttpProvider, YandexProvider
from tests.conftest import Assistant, order_args, sandbox_orders

pytestmark = pytest.mark.django_db

STATE = "0199e210-2f13-744c-8fe5-c9a19fe27db7"
GATEWAY = "http://testserver"


def token_in(request: dict[str, Any]) -> str:
    """The confirmation token as it came back to the provider inside our result message."""
    found = re.findall(r"ibc_[A-Za-z0-9_-]+", json.dumps(request, ensure_ascii=False))
    assert found, "no confirmation token reached the provider"
    return found[-1]


def summary_in(request: dict[str, Any]) -> str:
    return (
        "Подтвердите: "
        + re.findall(r"Выставить счёт на [^.]+", json.dumps(request, ensure_ascii=False))[-1]
    )


def two_turns(run: Any, first: str, second: str) -> tuple[loop.Turn, loop.Turn]:
    """Turn 1: the model asks to create an order and gets the summary; turn 2: the human agrees."""
    history: list[Any] = [first]
    one = run(history)
    history += [*one.messages, second]
    return one, run(history)


# -- GigaChat --------------------------------------------------------------------------------


def gigachat_v1_call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "choices": [
            {
                "index": 0,
                "finish_reason": "function_call",
                "message": {
                    "role": "assistant",
                    "content": "",
                    "functions_state_id": STATE,
                    "function_call": {"name": "create_order", "arguments": arguments},
                },
            }
        ],
        "created": 1760000000,
        "model": "GigaChat",
        "object": "chat.completion",
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def gigachat_v1_text(text: str) -> dict[str, Any]:
    body = gigachat_v1_call({})
    body["choices"][0].update(finish_reason="stop", message={"role": "assistant", "content": text})
    return body


def test_gigachat_v1_turns_through_the_sdk(assistant: Assistant, gateway_http: httpx.Client):
    args = order_args()
    script = [
        lambda _: gigachat_v1_call(args),
        lambda request: gigachat_v1_text(summary_in(request)),
        lambda request: gigachat_v1_call({**args, "confirmation_token": token_in(request)}),
        lambda _: gigachat_v1_text("Счёт выставлен."),
    ]
    with HttpProvider(script) as provider:
        client = GigaChat(
            base_url=f"{provider.url}/api/v1",
            access_token="giga-token",
            model="GigaChat",
            verify_ssl_certs=False,
            max_retries=0,
        )

        def run(history: list[Any]) -> loop.Turn:
            messages = [
                m if isinstance(m, dict) else {"role": "user", "content": m} for m in history
            ]
            return loop.gigachat_turn(
                client, messages, gateway_url=GATEWAY, api_key=assistant.key, http=gateway_http
            )

        one, two = two_turns(run, "Выставь счёт Ромашке", "Да, выставляй")

    ours = definitions(assistant, "gigachat")
    sent = provider.requests[0]["body"]
    assert provider.requests[0]["path"] == "/api/v1/chat/completions"
    assert provider.requests[0]["authorization"] == "Bearer giga-token"
    assert sent["function_call"] == "auto"
    assert [
        (f["name"], f["description"], f["parameters"].get("required")) for f in sent["functions"]
    ] == [(f["name"], f["description"], f["parameters"].get("required")) for f in ours["functions"]]
    *_, echoed, result = provider.requests[1]["body"]["messages"]
    assert echoed["functions_state_id"] == STATE
    assert (result["role"], result["name"], result["functions_state_id"]) == (
        "function",
        "create_order",
        STATE,
    )
    assert json.loads(result["content"])["status"] == "confirmation_required"
    assert one.outcomes[0]["status"] == "confirmation_required"
    assert one.answer.startswith("Подтвердите: Выставить счёт на 366,00")
    assert [o["status"] for o in two.outcomes] == ["ok"]
    assert [o["id"] for o in sandbox_orders(assistant.http)] == [
        two.outcomes[0]["data"]["order_id"]
    ]
    assert two.answer == "Счёт выставлен."


def gigachat_v2_call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "GigaChat-2",
        "created_at": 1760000000,
        "finish_reason": "function_call",
        "messages": [
            {
                "role": "assistant",
                "tool_state_id": STATE,
                "content": [{"function_call": {"name": "create_order", "arguments": arguments}}],
            }
        ],
    }


def gigachat_v2_text(text: str) -> dict[str, Any]:
    return {
        "model": "GigaChat-2",
        "created_at": 1760000000,
        "finish_reason": "stop",
        "messages": [{"role": "assistant", "content": [{"text": text}]}],
    }


def test_gigachat_v2_turns_through_the_sdk(assistant: Assistant, gateway_http: httpx.Client):
    args = order_args()
    script = [
        lambda _: gigachat_v2_call(args),
        lambda request: gigachat_v2_text(summary_in(request)),
        lambda request: gigachat_v2_call({**args, "confirmation_token": token_in(request)}),
        lambda _: gigachat_v2_text("Счёт выставлен."),
    ]
    with HttpProvider(script) as provider:
        client = GigaChat(
            base_url=f"{provider.url}/api/v1",
            access_token="giga-token",
            model="GigaChat-2",
            verify_ssl_certs=False,
            max_retries=0,
        )

        def run(history: list[Any]) -> loop.Turn:
            messages = [
                m if isinstance(m, dict) else {"role": "user", "content": [{"text": m}]}
                for m in history
            ]
            return loop.gigachat_turn(
                client,
                messages,
                gateway_url=GATEWAY,
                api_key=assistant.key,
                contract="v2",
                http=gateway_http,
            )

        one, two = two_turns(run, "Выставь счёт Ромашке", "Да")

    sent = provider.requests[0]
    assert sent["path"] == "/api/v2/chat/completions"
    assert sent["body"]["tools"] == definitions(assistant, "gigachat-v2")["tools"]
    *_, echoed, result = provider.requests[1]["body"]["messages"]
    assert echoed["tools_state_id"] == STATE
    assert (result["role"], result["tools_state_id"]) == ("tool", STATE)
    part = result["content"][0]["function_result"]
    assert (part["name"], part["result"]["status"]) == ("create_order", "confirmation_required")
    assert one.answer.startswith("Подтвердите:")
    assert two.outcomes[0]["status"] == "ok"
    assert len(sandbox_orders(assistant.http)) == 1


# -- YandexGPT native (gRPC through the AI Studio SDK) -----------------------------------------


def yandex_call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "alternatives": [
            {
                "status": "ALTERNATIVE_STATUS_TOOL_CALLS",
                "message": {
                    "role": "assistant",
                    "toolCallList": {
                        "toolCalls": [
                            {"functionCall": {"name": "create_order", "arguments": arguments}}
                        ]
                    },
                },
            }
        ],
        "modelVersion": "stub",
    }


def yandex_text(text: str) -> dict[str, Any]:
    return {
        "alternatives": [
            {"status": "ALTERNATIVE_STATUS_FINAL", "message": {"role": "assistant", "text": text}}
        ],
        "modelVersion": "stub",
    }


def test_yandexgpt_native_turns_through_the_sdk(assistant: Assistant, gateway_http: httpx.Client):
    args = order_args()
    script = [
        lambda _: yandex_call(args),
        lambda request: yandex_text(summary_in(request)),
        lambda request: yandex_call({**args, "confirmation_token": token_in(request)}),
        lambda _: yandex_text("Счёт выставлен."),
    ]
    with YandexProvider(script) as provider:
        sdk = AIStudio(
            folder_id="b1gstub",
            endpoint=None,
            verify=False,
            auth=APIKeyAuth("key"),
            service_map={"ai-foundation-models": provider.address},
        )

        def run(history: list[Any]) -> loop.Turn:
            messages = [{"role": "user", "text": m} if isinstance(m, str) else m for m in history]
            return loop.yandexgpt_turn(
                sdk, messages, gateway_url=GATEWAY, api_key=assistant.key, http=gateway_http
            )

        one, two = two_turns(run, "Выставь счёт Ромашке", "Да")

    first = provider.requests[0]
    assert first["tools"] == definitions(assistant, "yandexgpt")["tools"]
    *_, echoed, result = provider.requests[1]["messages"]
    assert echoed["toolCallList"]["toolCalls"][0]["functionCall"]["name"] == "create_order"
    assert result["role"] == "user"
    [item] = result["toolResultList"]["toolResults"]
    assert item["functionResult"]["name"] == "create_order"
    assert json.loads(item["functionResult"]["content"])["status"] == "confirmation_required"
    assert one.answer.startswith("Подтвердите:")
    assert two.outcomes[0]["status"] == "ok"
    assert len(sandbox_orders(assistant.http)) == 1


# -- OpenAI and YandexGPT's OpenAI-compatible endpoint -------------------------------------------


def every_field(node: dict[str, Any], value: Any) -> Any:
    if isinstance(value, dict):
        return {
            name: every_field(child, value.get(name)) for name, child in node["properties"].items()
        }
    if isinstance(value, list):
        return [every_field(node["items"], item) for item in value]
    return value


def openai_calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 1760000000,
        "model": "stub",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {
                                "name": "create_order",
                                "arguments": json.dumps(arguments),
                            },
                        }
                        for call_id, arguments in calls
                    ],
                },
            }
        ],
    }


def openai_text(text: str) -> dict[str, Any]:
    body = openai_calls()
    body["choices"][0].update(finish_reason="stop", message={"role": "assistant", "content": text})
    return body


@pytest.mark.parametrize(
    ("fmt", "ids"),
    [
        ("openai", ("call_1", "call_2")),
        ("openai-strict", ("call_1", "call_2")),
        # Yandex's compatible endpoint uses the function name as the id (formats.md, [Y9]).
        ("yandexgpt-openai", ("create_order", "create_order")),
    ],
)
def test_openai_turns_through_the_sdk(
    assistant: Assistant, gateway_http: httpx.Client, fmt: str, ids: tuple[str, str]
):
    args = order_args()
    if fmt == "openai-strict":  # a strict schema makes the model send every field, null or not
        [tool] = [
            t
            for t in definitions(assistant, fmt)["tools"]
            if t["function"]["name"] == "create_order"
        ]
        args = every_field(tool["function"]["parameters"], args)

    def confirm(request: dict[str, Any]) -> dict[str, Any]:
        confirmed = {**args, "confirmation_token": token_in(request)}
        # Parallel identical calls in one reply: one order, and both ids get an answer.
        return openai_calls((ids[0], confirmed), (ids[1], confirmed))

    script = [
        lambda _: openai_calls((ids[0], args)),
        lambda request: openai_text(summary_in(request)),
        confirm,
        lambda _: openai_text("Счёт выставлен."),
    ]
    with HttpProvider(script) as provider:
        client = OpenAI(api_key="sk-stub", base_url=f"{provider.url}/v1", max_retries=0)

        def run(history: list[Any]) -> loop.Turn:
            messages = [
                {"role": "user", "content": m} if isinstance(m, str) else m for m in history
            ]
            return loop.openai_turn(
                client,
                messages,
                model="stub",
                gateway_url=GATEWAY,
                api_key=assistant.key,
                fmt=fmt,
                http=gateway_http,
            )

        one, two = two_turns(run, "Выставь счёт Ромашке", "Да")

    ours = definitions(assistant, fmt)
    sent = provider.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["authorization"] == "Bearer sk-stub"
    assert sent["body"]["tools"] == ours["tools"]
    assert sent["body"].get("parallel_tool_calls") == ours.get("parallel_tool_calls")
    *_, echoed, result = provider.requests[1]["body"]["messages"]
    assert echoed["tool_calls"][0]["id"] == ids[0]
    assert (result["role"], result["tool_call_id"]) == ("tool", ids[0])
    assert json.loads(result["content"])["status"] == "confirmation_required"
    assert one.answer.startswith("Подтвердите:")
    *_, first_answer, second_answer = provider.requests[3]["body"]["messages"]
    assert [first_answer["tool_call_id"], second_answer["tool_call_id"]] == list(ids)
    assert [o["status"] for o in two.outcomes] == ["ok", "ok"]
    assert len(sandbox_orders(assistant.http)) == 1
    assert two.answer == "Счёт выставлен."
