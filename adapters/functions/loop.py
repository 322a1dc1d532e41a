"""One assistant turn with your own SDK client, every function call going through the gateway.

Our definitions go in, each call the model makes is executed by the gateway and its result sent
back, until the model answers in text:

    from gigachat import GigaChat
    from adapters.functions.loop import gigachat_turn

    turn = gigachat_turn(GigaChat(credentials=..., model="GigaChat"),
                         [{"role": "user", "content": "Какие счета не оплачены?"}],
                         gateway_url="http://127.0.0.1:8000", api_key="ibg_...")
    print(turn.answer)           # the model's reply to the human
    history += turn.messages     # calls, results and the answer, in the SDK's own input form

The same for `yandexgpt_turn(AIStudio(...), ...)` and `openai_turn(OpenAI(...), model=...)`
(also YandexGPT's OpenAI-compatible endpoint: `fmt="yandexgpt-openai"`). A write tool's first
call returns a summary and a confirmation token: the model relays it, and the operation runs
only when the human agrees in a later turn. The SDKs are imported by the caller, not here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from gigachat import GigaChat
    from openai import OpenAI
    from yandex_ai_studio_sdk import AIStudio


@dataclass
class Turn:
    """answer is None when max_rounds ran out before the model answered in text."""

    answer: str | None
    messages: list[Any] = field(default_factory=list)
    outcomes: list[dict[str, Any]] = field(default_factory=list)


class GatewayError(RuntimeError):
    """The gateway refused the request itself (bad key, a message it could not read)."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"gateway answered {status}: {body}")
        self.status = status
        self.body = body


class Gateway:
    """The two requests a loop makes: the definitions, and a platform message to execute."""

    def __init__(
        self, url: str, api_key: str, http: httpx.Client | None = None, timeout: float = 60.0
    ) -> None:
        self.url = url.rstrip("/")
        self.owned = http is None
        self.http = http or httpx.Client(timeout=timeout)
        self.headers = {"Authorization": f"Bearer {api_key}"}

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.owned:
            self.http.close()

    def definitions(self, fmt: str) -> dict[str, Any]:
        response = self.http.get(
            f"{self.url}/api/v1/tools", params={"format": fmt}, headers=self.headers
        )
        return self._body(response)

    def execute(self, platform: str, message: dict[str, Any]) -> Any:
        response = self.http.post(
            f"{self.url}/api/v1/{platform}/call", json=message, headers=self.headers
        )
        return self._body(response)

    @staticmethod
    def _body(response: httpx.Response) -> Any:
        body = response.json()
        if response.status_code != 200:
            raise GatewayError(response.status_code, body)
        return body


def gigachat_turn(
    client: GigaChat,
    messages: list[dict[str, Any]],
    *,
    gateway_url: str,
    api_key: str,
    contract: str = "v1",
    model: str | None = None,
    http: httpx.Client | None = None,
    max_rounds: int = 5,
) -> Turn:
    """GigaChat: v1 `client.chat()` with `functions`, or v2 `client.chat.create()` with `tools`.
    ``messages`` are dicts in that contract's shape."""
    with Gateway(gateway_url, api_key, http) as gateway:
        return _gigachat(
            client, messages, gateway, v2=contract == "v2", model=model, max_rounds=max_rounds
        )


def _gigachat(
    client: GigaChat,
    messages: list[dict[str, Any]],
    gateway: Gateway,
    *,
    v2: bool,
    model: str | None,
    max_rounds: int,
) -> Turn:
    definitions = gateway.definitions("gigachat-v2" if v2 else "gigachat")
    turn = Turn(answer=None)
    for _ in range(max_rounds):
        payload: dict[str, Any] = {"messages": [*messages, *turn.messages], **definitions}
        if model:
            payload["model"] = model
        reply: Any  # v2's ChatMessage or v1's Messages: two SDK classes read by the same names
        if v2:
            reply = client.chat.create(payload).messages[0]
            called = reply.function_call or any(p.function_call for p in reply.content or [])
            text = "".join(part.text or "" for part in reply.content or [])
        else:
            reply = client.chat(payload).choices[0].message
            called, text = reply.function_call, reply.content
        message = reply.model_dump(exclude_none=True, by_alias=True)
        turn.messages.append(message)
        if not called:
            turn.answer = text
            return turn
        result = gateway.execute("gigachat", message)
        turn.messages.append(result)
        turn.outcomes.append(
            result["content"][0]["function_result"]["result"]
            if v2
            else json.loads(result["content"])
        )
    return turn


def yandexgpt_turn(
    sdk: AIStudio,
    messages: list[Any],
    *,
    gateway_url: str,
    api_key: str,
    model: str = "yandexgpt",
    http: httpx.Client | None = None,
    max_rounds: int = 5,
) -> Turn:
    """YandexGPT native completions through the AI Studio SDK (`sdk.models.completions`)."""
    with Gateway(gateway_url, api_key, http) as gateway:
        return _yandexgpt(sdk, messages, gateway, model=model, max_rounds=max_rounds)


def _yandexgpt(
    sdk: AIStudio, messages: list[Any], gateway: Gateway, *, model: str, max_rounds: int
) -> Turn:
    tools = [
        sdk.tools.function(
            tool["function"]["parameters"],
            name=tool["function"]["name"],
            description=tool["function"]["description"],
        )
        for tool in gateway.definitions("yandexgpt")["tools"]
    ]
    gpt = sdk.models.completions(model).configure(tools=tools)
    turn = Turn(answer=None)
    for _ in range(max_rounds):
        result = gpt.run([*messages, *turn.messages])
        if not result.tool_calls:
            turn.messages.append({"role": "assistant", "text": result.text})
            turn.answer = result.text
            return turn
        # The REST message (proto3 JSON) built from the SDK's public fields.
        # The SDK types `function` as optional, yet raises on any tool call but a function's.
        message = {
            "role": "assistant",
            "toolCallList": {
                "toolCalls": [
                    {
                        "functionCall": {
                            "name": call.function.name,  # type: ignore[union-attr]
                            "arguments": call.function.arguments,  # type: ignore[union-attr]
                        }
                    }
                    for call in result.tool_calls
                ]
            },
        }
        results = [
            item["functionResult"]
            for item in gateway.execute("yandexgpt", message)["toolResultList"]["toolResults"]
        ]
        # The SDK echoes its own result object as the assistant message.
        turn.messages += [result, {"role": "user", "tool_results": results}]
        turn.outcomes += [json.loads(item["content"]) for item in results]
    return turn


def openai_turn(
    client: OpenAI,
    messages: list[dict[str, Any]],
    *,
    model: str,
    gateway_url: str,
    api_key: str,
    fmt: str = "openai",
    platform: str = "openai",
    http: httpx.Client | None = None,
    max_rounds: int = 5,
) -> Turn:
    """OpenAI Chat Completions (fmt openai or openai-strict), YandexGPT's OpenAI-compatible
    endpoint (fmt yandexgpt-openai, the client's base_url pointing there), or any platform
    whose calls arrive in the OpenAI shape: ``platform`` names its `/api/v1/<platform>/call`."""
    with Gateway(gateway_url, api_key, http) as gateway:
        return _openai(
            client,
            messages,
            gateway,
            model=model,
            fmt=fmt,
            platform=platform,
            max_rounds=max_rounds,
        )


def _openai(
    client: OpenAI,
    messages: list[dict[str, Any]],
    gateway: Gateway,
    *,
    model: str,
    fmt: str,
    platform: str,
    max_rounds: int,
) -> Turn:
    definitions = gateway.definitions(fmt)
    turn = Turn(answer=None)
    for _ in range(max_rounds):
        history: list[Any] = [*messages, *turn.messages]  # dicts in the OpenAI shape
        reply = (
            client.chat.completions.create(model=model, messages=history, **definitions)
            .choices[0]
            .message
        )
        if not reply.tool_calls:
            turn.messages.append({"role": "assistant", "content": reply.content})
            turn.answer = reply.content
            return turn
        message = {
            "role": "assistant",
            "content": reply.content,
            "tool_calls": [call.model_dump(exclude_none=True) for call in reply.tool_calls],
        }
        results = gateway.execute(platform, message)
        turn.messages += [message, *results]
        turn.outcomes += [json.loads(item["content"]) for item in results]
    return turn
