"""Helpers for the operations tests: a distinctive INN, a parsed /metrics scrape."""

from __future__ import annotations

import secrets
import socket
from typing import Any

from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import order_args

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def valid_inn() -> str:
    """A random 10-digit INN of a legal entity whose checksum holds: a value no test reuses."""
    digits = [1 + secrets.randbelow(9)] + [secrets.randbelow(10) for _ in range(8)]
    weights = (2, 4, 10, 3, 5, 9, 4, 6, 8)
    control = sum(w * d for w, d in zip(weights, digits, strict=True)) % 11 % 10
    return "".join(map(str, digits)) + str(control)


def distinctive_order(inn: str, name: str) -> dict[str, Any]:
    args = order_args()
    args["customer"] = {**args["customer"], "vat_number": inn, "name": name}
    args["description"] = f"Заказ для {name}"
    return args


def scrape(http: Client | None = None, **headers: str) -> tuple[int, str, Samples]:
    response = (http or Client()).get("/metrics", **headers)
    text = response.content.decode()
    samples: Samples = {}
    if response.status_code == 200:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return response.status_code, text, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
