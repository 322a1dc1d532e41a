"""The stored token never goes to another host and is encrypted at rest."""

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from audit.actors import SCAFFOLDING
from tools.contours.services import ContourSetupError, create_contour
from tools.models import Contour

TOKEN = "a-very-secret-invoicebox-token-1234"


@pytest.mark.django_db
def test_database_column_holds_no_plaintext_token():
    contour = create_contour(
        "enc",
        mode="custom",
        base_url="https://proxy.example",
        token=TOKEN,
        merchant_id="ffffffff-ffff-ffff-ffff-ffffffffffff",
        actor=SCAFFOLDING,
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT api_token FROM tools_contour WHERE id = %s", [contour.pk])
        raw = cursor.fetchone()[0]
    assert TOKEN not in raw
    assert Contour.objects.get(pk=contour.pk).api_token == TOKEN


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["demo", "production"])
def test_official_modes_refuse_a_foreign_host(mode):
    with pytest.raises(ContourSetupError):
        create_contour(
            "x",
            mode=mode,
            base_url="https://evil.example",
            token=TOKEN,
            merchant_id="ffffffff-ffff-ffff-ffff-ffffffffffff",
            actor=SCAFFOLDING,
        )


@pytest.mark.django_db
def test_custom_http_only_on_loopback():
    with pytest.raises(ContourSetupError):
        create_contour(
            "x", mode="custom", base_url="http://evil.example", token=TOKEN, actor=SCAFFOLDING
        )
    contour = create_contour(
        "y", mode="custom", base_url="http://127.0.0.1:9000", token=TOKEN, actor=SCAFFOLDING
    )
    assert contour.base_url == "http://127.0.0.1:9000"


@pytest.mark.django_db
def test_changing_base_url_clears_the_token():
    contour = create_contour(
        "move", mode="custom", base_url="https://proxy.example", token=TOKEN, actor=SCAFFOLDING
    )
    contour = Contour.objects.get(pk=contour.pk)
    contour.base_url = "https://other.example"
    with pytest.raises(ValidationError):
        contour.full_clean()
    contour.save()
    assert Contour.objects.get(pk=contour.pk).api_token == ""


@pytest.mark.django_db
def test_rotate_secrets_key_re_encrypts_with_the_first_key(settings):
    from cryptography.fernet import Fernet
    from django.core.management import call_command

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.GATEWAY_SECRETS_KEYS = [old]
    contour = create_contour(
        "rot", mode="custom", base_url="https://proxy.example", token=TOKEN, actor=SCAFFOLDING
    )
    settings.GATEWAY_SECRETS_KEYS = [new, old]
    assert Contour.objects.get(pk=contour.pk).api_token == TOKEN  # old key still decrypts
    call_command("rotate_secrets_key")
    settings.GATEWAY_SECRETS_KEYS = [new]
    assert Contour.objects.get(pk=contour.pk).api_token == TOKEN
