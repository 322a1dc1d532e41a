"""Production settings refuse to start unsafe: debug on, a published secret, no broker."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOOD_SECRET = "k" * 50
PRODUCTION = {
    "GATEWAY_ENV": "production",
    "DJANGO_SECRET_KEY": GOOD_SECRET,
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
    "DJANGO_DEBUG": "false",
    "GATEWAY_JOURNAL_KEYS": "j2:" + "s" * 40 + ",j1:" + "t" * 40,
    # An Ed25519 private key (32 raw bytes, base64) that signs journal checkpoints.
    "GATEWAY_JOURNAL_SIGNING_KEY": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
    # A Fernet key (32 url-safe base64 bytes) for the secrets stored at rest.
    "GATEWAY_SECRETS_KEY": "bXk0TGl0dGxlU2VjcmV0S2V5Rm9yVGVzdHNPbmx5ISE=",
}


def load_settings(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_", "GATEWAY_"))
    }
    code = (
        "import config.settings as s; print(s.DEBUG, getattr(s, 'SESSION_COOKIE_SECURE', "
        "False), getattr(s, 'CSRF_COOKIE_SECURE', False), s.CELERY_TASK_ALWAYS_EAGER)"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_production_with_its_secrets_starts_with_secure_cookies_and_a_real_broker():
    done = load_settings(**PRODUCTION)

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True", "False"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"DJANGO_DEBUG": "true"}, "DJANGO_DEBUG должен быть выключен"),
        ({"DJANGO_SECRET_KEY": ""}, "нужен DJANGO_SECRET_KEY"),
        ({"DJANGO_SECRET_KEY": "dev-only-insecure-secret-key-change-me"}, "общеизвестное значение"),
        ({"DJANGO_SECRET_KEY": "django-insecure-abc"}, "общеизвестное значение"),
        ({"CELERY_BROKER_URL": "memory://"}, "CELERY_BROKER_URL"),
        (
            {"GATEWAY_JOURNAL_KEYS": ""},
            "нужен GATEWAY_JOURNAL_KEYS (kid:secret, см. docs/production.md)",
        ),
        (
            {"GATEWAY_JOURNAL_SIGNING_KEY": ""},
            "нужен GATEWAY_JOURNAL_SIGNING_KEY (закрытый ключ Ed25519",
        ),
        ({"GATEWAY_JOURNAL_KEYS": "j1:short"}, "в секрете ключа 'j1' 5 симв."),
        (
            {"GATEWAY_JOURNAL_KEYS": "j1:" + "s" * 40 + ",bare-secret-value-xyz"},
            "элемент 2 не вида kid:secret",
        ),
        ({"GATEWAY_JOURNAL_KEYS": "j1:" + "s" * 40 + ",j1:" + "t" * 40}, "'j1' встречается дважды"),
        # Operators' alerts (customer data) must not go to the process log or a file.
        (
            {"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"},
            "EMAIL_BACKEND=django.core.mail.backends.console.EmailBackend пишет",
        ),
        (
            {"EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend"},
            "при GATEWAY_ENV=production это запрещено",
        ),
        # Trusting peer addresses for /metrics needs the proxies uvicorn believes named too.
        ({"METRICS_ALLOWED_IPS": "10.0.0.0/8"}, "задайте и FORWARDED_ALLOW_IPS"),
        ({"GATEWAY_REQUIRE_SECOND_FACTOR": "false"}, "GATEWAY_REQUIRE_SECOND_FACTOR нельзя"),
    ],
)
def test_production_refuses_to_start_unsafe(change: dict[str, str], message: str):
    done = load_settings(**{**PRODUCTION, **change})

    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and message in done.stderr


def metrics_trust(**env: str) -> str:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "CELERY_", "GATEWAY_", "METRICS_", "FORWARDED_"))
    }
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import config.settings as s; print(','.join(s.METRICS_ALLOWED_IPS) or '-')",
        ],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def test_metrics_trusts_no_address_in_production_unless_told_with_its_proxies():
    assert metrics_trust() == "127.0.0.1,::1"  # development: loopback
    assert metrics_trust(**PRODUCTION) == "-"  # production: the token alone
    assert (
        metrics_trust(**PRODUCTION, METRICS_ALLOWED_IPS="10.0.0.7", FORWARDED_ALLOW_IPS="10.0.0.1")
        == "10.0.0.7"
    )


def test_development_needs_nothing_and_runs_tasks_eagerly():
    done = load_settings()

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "False", "True"]


def test_production_journal_keys_keep_their_order_and_never_print_a_secret():
    code = "import config.settings as s; print(list(s.GATEWAY_JOURNAL_KEYS))"
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_", "GATEWAY_"))
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, **PRODUCTION},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    short = load_settings(**{**PRODUCTION, "GATEWAY_JOURNAL_KEYS": "j1:secret-to-hide"})
    bare = load_settings(**{**PRODUCTION, "GATEWAY_JOURNAL_KEYS": "bare-secret-to-hide-" * 3})

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['j2', 'j1']"
    for refused in (short, bare):
        assert refused.returncode != 0
        assert "GATEWAY_JOURNAL_KEYS" in refused.stderr
        assert "to-hide" not in refused.stderr


def documented_required() -> list[str]:
    """The variables docs/production.md lists under "Required with GATEWAY_ENV=production"."""
    text = (ROOT / "docs" / "production.md").read_text()
    section = text.split("Required with `GATEWAY_ENV=production`", 1)[1].split("\nAlso set:", 1)[0]
    return re.findall(r"^- `([A-Z_]+)", section, flags=re.M)


def test_the_documented_required_settings_are_enough_and_each_is_needed():
    # given exactly what the production guide, the systemd env skeleton and the compose header
    # name (DJANGO_DEBUG is required off, which its default already is)
    names = documented_required()
    skeleton = (ROOT / "docs" / "deploy" / "systemd" / "env.example").read_text()
    header = (ROOT / "docs" / "deploy" / "compose.yaml").read_text().split("\nx-gateway", 1)[0]
    secrets = [name for name in names if name != "DJANGO_DEBUG"]
    assert all(f"\n{name}=" in skeleton for name in secrets)
    assert all(name in header for name in secrets if name != "CELERY_BROKER_URL")

    # when / then: those alone start production
    only_documented = {name: PRODUCTION[name] for name in secrets}
    done = load_settings(GATEWAY_ENV="production", **only_documented)
    assert done.returncode == 0, done.stderr

    # and each one is needed
    for name in secrets:
        missing = load_settings(
            GATEWAY_ENV="production", **{k: v for k, v in only_documented.items() if k != name}
        )
        assert "ImproperlyConfigured" in missing.stderr, name
