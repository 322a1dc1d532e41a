"""A local model behind an OpenAI-compatible server with its tool parser off, driven through the gateway."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

Message = dict[str, str]
Stop = Literal["answer", "confirmation", "max_rounds"]
# Results that wait for a human: the loop hands control back instead of letting the model go on.
HUMAN_STATUSES = frozenset({"confirmation_required", "awaiting_approval"})


class LocalLoopError(Exception):
    """The model server or the gateway answered something this loop cannot go on with."""


@dataclass
class LoopResult:
    messages: list[Message]
    stopped: Stop
    answer: str = ""
    exchanges: list[dict[str, Any]] = field(default_factory=list)
    # Envelopes that need a person: show each `confirmation.summary`, then resume() on consent.
    pending: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class LocalLoop:
    """Prompt with the gateway's <tools> block, let the model write <tool_call> text, execute it
    through `POST /api/v1/text/call` and send the <tool_response> turn back, at most
    `max_rounds` model replies per run. vLLM: `extra_body={"skip_special_tokens": False}` keeps
    tags that are special tokens of the model (Hermes 2 Pro) in the text."""

    model_url: str  # e.g. http://127.0.0.1:8001/v1 (vLLM, llama.cpp server, Ollama /v1)
    model: str
    gateway_url: str  # e.g. http://127.0.0.1:8000
    gateway_key: str
    max_rounds: int = 6
    timeout: float = 120.0
    temperature: float = 0.0
    model_key: str = ""
    extra_body: dict[str, Any] = field(default_factory=dict)

    def start(self, user_text: str) -> LoopResult:
        messages = [
            {"role": "system", "content": self.system_prompt()},
            {"role": "user", "content": user_text},
        ]
        return self._run(messages)

    def resume(self, messages: list[Message], user_text: str) -> LoopResult:
        """Go on after a human answered (for instance agreed to a summary)."""
        return self._run([*messages, {"role": "user", "content": user_text}])

    def system_prompt(self) -> str:
        with self._gateway() as http:
            response = http.get("/api/v1/tools", params={"format": "hermes"})
        body = _json(response, "gateway tools")
        return str(body["system_prompt"])

    def _run(self, messages: list[Message]) -> LoopResult:
        messages = list(messages)
        exchanges: list[dict[str, Any]] = []
        with self._gateway() as gateway, self._model() as model:
            for _ in range(self.max_rounds):
                text = self._complete(model, messages)
                messages.append({"role": "assistant", "content": text})
                exchange = _json(
                    gateway.post("/api/v1/text/call", json={"text": text}), "gateway text/call"
                )
                exchanges.append(exchange)
                if not exchange["reply"]:
                    return LoopResult(messages, "answer", text, exchanges)
                # Qwen templates carry tool results in a user turn; see prompt.TOOL_RESPONSE_ROLE.
                messages.append({"role": "user", "content": exchange["reply"]})
                pending = [r for r in exchange["results"] if r.get("status") in HUMAN_STATUSES]
                if pending:
                    return LoopResult(messages, "confirmation", "", exchanges, pending)
        return LoopResult(messages, "max_rounds", "", exchanges)

    def _complete(self, model: httpx.Client, messages: list[Message]) -> str:
        payload = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            **self.extra_body,
        }
        body = _json(model.post("/chat/completions", json=payload), "model server")
        try:
            message = body["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise LocalLoopError(
                f"model server: no choices[0].message in {str(body)[:200]}"
            ) from None
        if message.get("tool_calls"):
            raise LocalLoopError(
                "model server parsed the calls itself: start it without a tool "
                "parser, or send its tool_calls to /api/v1/openai/call"
            )
        content = message.get("content")
        return content if isinstance(content, str) else ""

    def _gateway(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.gateway_url,
            timeout=self.timeout,
            headers={"Authorization": f"Bearer {self.gateway_key}"},
        )

    def _model(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.model_key}"} if self.model_key else {}
        return httpx.Client(
            base_url=self.model_url.rstrip("/"), timeout=self.timeout, headers=headers
        )


def _json(response: httpx.Response, who: str) -> dict[str, Any]:
    if response.status_code != 200:
        raise LocalLoopError(f"{who}: HTTP {response.status_code}: {response.text[:300]}")
    try:
        body = response.json()
    except ValueError:
        raise LocalLoopError(f"{who}: not JSON: {response.text[:300]}") from None
    if not isinstance(body, dict):
        raise LocalLoopError(f"{who}: expected an object, got {response.text[:300]}")
    return body
