"""Model targets: the official SDKs, configured only by their own environment variables, talk to
scripted stubs on 127.0.0.1; every call the scripted model makes runs through the gateway."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from tests.adapters.functions.stubs import HttpProvider, YandexProvider
from tests.conformance.conftest import ROOT, Kit, order_arguments, steps, token_in

CONVERSATION = [
    "model calls find_orders",
    "create_order stops at the confirmation",
    "answer is text",
    "confirmed create_order is ok",
    "final answer is text",
    "exactly one order exists",
]
Reply = Callable[[dict[str, Any]], Any]


# -- OpenAI Chat Completions (also Yandex's OpenAI-compatible endpoint) -------------------------


def openai_calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 1760000000,
        "model": "stub-model",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{n}",
                            "type": "function",
                            "function": {
                                "name": name,
                                "arguments": json.dumps(args, ensure_ascii=False),
                            },
                        }
                        for n, (name, args) in enumerate(calls)
                    ],
                },
            }
        ],
    }


def openai_text(text: str) -> dict[str, Any]:
    body = openai_calls()
    body["choices"][0].update(finish_reason="stop", message={"role": "assistant", "content": text})
    return body


def openai_script(args: dict[str, Any]) -> list[Reply]:
    return [
        lambda _: openai_calls(("find_orders", {"status": ["created"]}), ("create_order", args)),
        lambda _: openai_text("Подтвердите счёт на 10,00 ₽."),
        lambda req: openai_calls(("create_order", {**args, "confirmation_token": token_in(req)})),
        lambda _: openai_text("Счёт выставлен."),
    ]


@pytest.mark.parametrize("target", ["openai", "yandexgpt-openai"])
def test_openai_compatible_conversation_passes(kit: Kit, target: str):
    with HttpProvider(openai_script(order_arguments())) as provider:
        env = (
            {
                "OPENAI_API_KEY": "sk-stub",
                "OPENAI_BASE_URL": f"{provider.url}/v1",
                "OPENAI_MODEL": "stub-model",
            }
            if target == "openai"
            else {
                "YC_API_KEY": "yc-stub",
                "YC_FOLDER_ID": "b1gstub",
                "YANDEX_OPENAI_BASE_URL": f"{provider.url}/v1",
            }
        )
        done, report = kit.run(target, "--contour", "kit", env=env)

    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert [s["name"] for s in report["steps"]] == CONVERSATION
    assert set(steps(report).values()) == {"pass"}
    first = provider.requests[0]["body"]
    assert {t["function"]["name"] for t in first["tools"]} >= {"find_orders", "create_order"}
    if target == "yandexgpt-openai":
        assert first["model"] == "gpt://b1gstub/yandexgpt/latest"
    # the credential went to the provider and nowhere into the report
    assert "sk-stub" not in json.dumps(report) and "yc-stub" not in json.dumps(report)


def test_a_model_that_skips_the_confirmation_fails_the_run(kit: Kit):
    # given a model that agrees on the person's behalf without asking
    args = order_arguments()
    script = [
        lambda _: openai_calls(("find_orders", {}), ("create_order", args)),
        lambda req: openai_calls(("create_order", {**args, "confirmation_token": token_in(req)})),
        lambda _: openai_text("Готово."),
    ]
    with HttpProvider(script) as provider:
        done, report = kit.run(
            "openai",
            "--contour",
            "kit",
            env={
                "OPENAI_API_KEY": "sk-stub",
                "OPENAI_BASE_URL": f"{provider.url}/v1",
                "OPENAI_MODEL": "stub-model",
            },
        )

    assert done.returncode != 0
    assert steps(report)["create_order stops at the confirmation"] == "fail"


def test_a_missing_credential_names_the_variable(kit: Kit):
    done, report = kit.run("openai", "--contour", "kit")

    assert done.returncode != 0
    assert report is None
    assert "OPENAI_API_KEY" in done.stderr


def without_sdk(
    kit: Kit, module: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The kit on an install without the SDK (`make demo`): Python's own rule that a None in
    sys.modules makes `import module` raise ModuleNotFoundError stands in for the absent package."""
    code = (
        "import runpy, sys; sys.modules[sys.argv[1]] = None; "
        "sys.argv = ['manage.py', *sys.argv[2:]]; runpy.run_path('manage.py', run_name='__main__')"
    )
    return subprocess.run(
        [sys.executable, "-c", code, module, "conformance", *args],
        cwd=ROOT,
        env={**kit.env, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_missing_sdk_names_the_extra_to_install(kit: Kit):
    done = without_sdk(
        kit,
        "openai",
        "openai",
        "--contour",
        "kit",
        env={"OPENAI_API_KEY": "sk-stub", "OPENAI_MODEL": "stub-model"},
    )

    assert done.returncode != 0
    assert 'pip install -e ".[conformance]"' in done.stderr
    assert "ModuleNotFoundError" not in done.stderr


def test_a_missing_variable_is_named_before_the_missing_sdk(kit: Kit):
    done = without_sdk(kit, "gigachat", "gigachat", "--contour", "kit")

    assert done.returncode != 0
    assert "GIGACHAT_CREDENTIALS" in done.stderr and "conformance]" not in done.stderr


def test_a_model_target_refuses_a_contour_that_is_not_a_sandbox(kit: Kit):
    kit.manage(
        "create_contour", "demo-shop", "--mode", "demo", "--toolsets", "read,write", check=False
    )
    done, _ = kit.run(
        "openai", "--contour", "demo-shop", env={"OPENAI_API_KEY": "sk-stub", "OPENAI_MODEL": "m"}
    )

    assert done.returncode != 0
    assert "sandbox" in done.stderr


# -- GigaChat v1 and v2 ----------------------------------------------------------------------

STATE = "0199e210-2f13-744c-8fe5-c9a19fe27db7"


def giga_v1(message: dict[str, Any], reason: str) -> dict[str, Any]:
    return {
        "choices": [{"index": 0, "finish_reason": reason, "message": message}],
        "created": 1760000000,
        "model": "GigaChat",
        "object": "chat.completion",
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def giga_v1_call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return giga_v1(
        {
            "role": "assistant",
            "content": "",
            "functions_state_id": STATE,
            "function_call": {"name": name, "arguments": args},
        },
        "function_call",
    )


def giga_v2(content: list[dict[str, Any]], reason: str) -> dict[str, Any]:
    return {
        "model": "GigaChat-2",
        "created_at": 1760000000,
        "finish_reason": reason,
        "messages": [{"role": "assistant", "tool_state_id": STATE, "content": content}],
    }


def giga_v2_call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return giga_v2([{"function_call": {"name": name, "arguments": args}}], "function_call")


def tokens(count: int) -> Reply:
    return lambda body: [{"object": "tokens", "tokens": count, "characters": len(body["input"][0])}]


@pytest.mark.parametrize("target", ["gigachat", "gigachat-v2"])
def test_gigachat_conversation_passes_and_counts_the_function_block(kit: Kit, target: str):
    args = order_arguments()
    call, text = (
        (giga_v2_call, lambda t: giga_v2([{"text": t}], "stop"))
        if target == "gigachat-v2"
        else (giga_v1_call, lambda t: giga_v1({"role": "assistant", "content": t}, "stop"))
    )
    script = [
        tokens(3100),
        lambda _: call("find_orders", {"status": ["created"]}),
        lambda _: call("create_order", args),
        lambda _: text("Подтвердите счёт."),
        lambda req: call("create_order", {**args, "confirmation_token": token_in(req)}),
        lambda _: text("Счёт выставлен."),
    ]
    with HttpProvider(script) as provider:
        done, report = kit.run(
            target,
            "--contour",
            "kit",
            env={
                "GIGACHAT_BASE_URL": f"{provider.url}/api/v1",
                "GIGACHAT_ACCESS_TOKEN": "giga-tok",
                "GIGACHAT_VERIFY_SSL_CERTS": "False",
            },
        )

    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert [s["name"] for s in report["steps"]] == ["function block tokens", *CONVERSATION]
    assert set(steps(report).values()) == {"pass"}
    assert "3100 токенов" in report["steps"][0]["detail"]
    assert provider.requests[0]["path"] == "/api/v1/tokens/count"


def test_a_function_block_over_the_gigachat_cap_fails(kit: Kit):
    with HttpProvider([tokens(5000)]) as provider:
        done, report = kit.run(
            "gigachat",
            "--contour",
            "kit",
            env={
                "GIGACHAT_BASE_URL": f"{provider.url}/api/v1",
                "GIGACHAT_ACCESS_TOKEN": "giga-tok",
                "GIGACHAT_VERIFY_SSL_CERTS": "False",
            },
        )

    assert done.returncode != 0
    assert steps(report)["function block tokens"] == "fail"


# -- YandexGPT native (gRPC) -----------------------------------------------------------------


def yandex(message: dict[str, Any], status: str) -> dict[str, Any]:
    return {"alternatives": [{"status": status, "message": message}], "modelVersion": "stub"}


def yandex_call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return yandex(
        {
            "role": "assistant",
            "toolCallList": {"toolCalls": [{"functionCall": {"name": name, "arguments": args}}]},
        },
        "ALTERNATIVE_STATUS_TOOL_CALLS",
    )


def yandex_text(text: str) -> dict[str, Any]:
    return yandex({"role": "assistant", "text": text}, "ALTERNATIVE_STATUS_FINAL")


def test_yandexgpt_native_conversation_passes(kit: Kit):
    args = order_arguments()
    script = [
        lambda _: yandex_call("find_orders", {"status": ["created"]}),
        lambda _: yandex_call("create_order", args),
        lambda _: yandex_text("Подтвердите счёт."),
        lambda req: yandex_call("create_order", {**args, "confirmation_token": token_in(req)}),
        lambda _: yandex_text("Счёт выставлен."),
    ]
    with YandexProvider(script) as provider:
        done, report = kit.run(
            "yandexgpt",
            "--contour",
            "kit",
            env={
                "YC_API_KEY": "yc-stub",
                "YC_FOLDER_ID": "b1gstub",
                "CONFORMANCE_YANDEX_GRPC": provider.address,
            },
        )

    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert set(steps(report).values()) == {"pass"}


# -- Hermes / Qwen text through LocalLoop -------------------------------------------------------


def tool_call(name: str, args: dict[str, Any]) -> str:
    return (
        "<tool_call>\n"
        + json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
        + "\n</tool_call>"
    )


def test_hermes_conversation_passes_through_local_loop(kit: Kit):
    args = order_arguments()
    script = [
        lambda _: openai_text(
            tool_call("find_orders", {"status": ["created"]})
            + "\n"
            + tool_call("create_order", args)
        ),
        lambda req: openai_text(
            tool_call("create_order", {**args, "confirmation_token": token_in(req)})
        ),
        lambda _: openai_text("Счёт выставлен."),
    ]
    with HttpProvider(script) as provider:
        done, report = kit.run(
            "hermes",
            "--contour",
            "kit",
            "--model-url",
            f"{provider.url}/v1",
            "--model",
            "qwen-stub",
        )

    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert set(steps(report).values()) == {"pass"}
    assert report["platform"]["model"] == "qwen-stub"
    # the system prompt the model got is the gateway's own <tools> block
    assert "<tools>" in provider.requests[0]["body"]["messages"][0]["content"]


def test_hermes_needs_the_model_server(kit: Kit):
    done, _ = kit.run("hermes", "--contour", "kit")

    assert done.returncode != 0
    assert "--model-url" in done.stderr
