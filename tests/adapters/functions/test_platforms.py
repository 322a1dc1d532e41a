"""Each platform is declared once (adapters/functions/platform.py); what the rest of the gateway
reads from that declaration: the registry, the call endpoints, the journal channel, the OpenAPI
document, the home page and the conformance kit."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from adapters.functions.formats import FORMATS, OPTIONS, PLATFORMS
from adapters.functions.platform import Platform
from audit.models import Channel, JournalEntry
from conformance.management.commands.conformance import MODELS
from tests.conftest import Assistant
from tools.formats import registry

BY_SLUG = {platform.slug: platform for platform in PLATFORMS}


def schema(client: Client) -> dict[str, Any]:
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    return json.loads(response.content)


def examples(platform: Platform, *, request: bool) -> list[Any]:
    return [
        example.value
        for example in platform.examples
        if (example.request_only if request else example.response_only)
    ]


def shape(value: Any) -> Any:
    """The keys a message has (of its first item, for a list of messages)."""
    if isinstance(value, list):
        return ["list", sorted(value[0]) if value else []]
    return sorted(value)


def test_slugs_and_format_names_are_unique_across_platforms():
    assert len(BY_SLUG) == len(PLATFORMS)
    assert sum(len(platform.formats) for platform in PLATFORMS) == len(FORMATS)


def test_the_registry_holds_every_platform_with_its_formats_and_options():
    assert registry.platforms() == PLATFORMS
    registered = registry.formats()
    for platform in PLATFORMS:
        for name, exporter in platform.formats.items():
            assert registered[name] is exporter, name
        for name, options in platform.options.items():
            assert all(name in registry.taking(option) for option in options), name
    assert registry.taking("parallel_tool_calls") == sorted(
        name for name, options in OPTIONS.items() if "parallel_tool_calls" in options
    )


def test_a_platform_is_refused_options_for_a_format_it_does_not_declare():
    openai = BY_SLUG["openai"]

    with pytest.raises(ValueError, match="options for formats it lacks"):
        Platform(
            slug="x",
            name="X",
            channel=openai.channel,
            formats={"x": openai.formats["openai"]},
            respond=openai.respond,
            summary="",
            examples=(),
            label="X",
            options={"openai": openai.options["openai"]},
        )


def test_a_second_platform_under_a_taken_slug_is_a_wiring_bug():
    openai = BY_SLUG["openai"]
    twin = Platform(
        slug="openai",
        name="Twin",
        channel=openai.channel,
        formats=openai.formats,
        respond=openai.respond,
        summary="",
        examples=(),
        label="Twin",
    )

    with pytest.raises(ValueError, match="already registered"):
        registry.register_platform(twin)


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.slug)
def test_the_channel_is_one_the_journal_accepts_and_the_modules_own(platform: Platform):
    module = __import__(platform.respond.__module__, fromlist=["CHANNEL"])

    assert platform.channel in Channel.values
    assert platform.channel == module.CHANNEL


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.slug)
def test_the_endpoint_is_routed_under_its_slug(platform: Platform):
    assert reverse(f"{platform.slug}-call") == platform.path


@pytest.mark.django_db
@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.slug)
def test_the_endpoint_wants_a_key(client: Client, platform: Platform):
    response = client.post(platform.path, data="{}", content_type="application/json")

    assert response.status_code in (401, 403)


@pytest.mark.django_db
@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.slug)
def test_a_malformed_message_is_refused_and_journaled_on_the_platforms_channel(
    assistant: Assistant, platform: Platform
):
    status, body = assistant.post(platform.path, {"role": "assistant"})

    assert (status, body["code"]) == (400, "invalid_arguments")
    assert JournalEntry.objects.get(pk=body["journal_id"]).channel == platform.channel


@pytest.mark.django_db
@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.slug)
def test_the_documented_request_example_is_answered_in_the_documented_shape(
    assistant: Assistant, platform: Platform
):
    requests, responses = examples(platform, request=True), examples(platform, request=False)
    assert requests and responses

    for request in requests:
        status, answer = assistant.post(platform.path, request)

        assert status == 200, answer
        assert shape(answer) == shape(responses[0])
    assert JournalEntry.objects.filter(channel=platform.channel, tool="find_orders").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.slug)
def test_the_openapi_document_carries_the_platforms_summary_and_examples(
    client: Client, platform: Platform
):
    operation = schema(client)["paths"][platform.path]["post"]
    body = operation["requestBody"]["content"]["application/json"]

    assert operation["summary"] == platform.summary
    assert [example["value"] for example in body["examples"].values()] == examples(
        platform, request=True
    )


@pytest.mark.django_db
def test_the_tools_parameters_list_the_registered_formats_and_who_takes_an_option(client: Client):
    parameters = {
        p["name"]: p["description"]
        for p in schema(client)["paths"]["/api/v1/tools"]["get"]["parameters"]
    }

    assert all(name in parameters["format"] for name in registry.formats())
    assert all(
        name in parameters["parallel_tool_calls"] for name in registry.taking("parallel_tool_calls")
    )
    assert "yandexgpt" not in parameters["parallel_tool_calls"]


@pytest.mark.django_db
def test_the_home_page_names_every_platform_in_order(client: Client):
    page = client.get("/").content.decode()

    labels = [piece.split("</span>", 1)[0] for piece in page.split("<span data-platform>")[1:]]
    assert labels == [platform.label for platform in PLATFORMS]


def test_every_platform_with_an_openai_sdk_is_a_conformance_target():
    declared = [platform.slug for platform in PLATFORMS if platform.openai_sdk is not None]

    assert "openai" in declared
    assert set(declared) <= set(MODELS)
