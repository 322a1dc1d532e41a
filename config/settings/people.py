"""People: failed logins (django-axes) and the second factor (TOTP, backup codes, passkeys)."""

import ipaddress
from datetime import timedelta

from django.core.exceptions import ImproperlyConfigured

from config.settings.environment import GATEWAY_SITE_URL, PRODUCTION, env

# Failed logins (django-axes, tools/people/logins.py, tools/people/login_guard.py): after AXES_FAILURE_LIMIT
# failures of one username from one address, that pair stays refused (the right password too)
# for the cool-off; the name from elsewhere and others behind the address are not locked.
# Beyond the pair, failures slow down: past its free allowance within the cool-off, a username
# (from anywhere) or an address (for any name) waits a doubling delay, at most
# GATEWAY_LOGIN_BACKOFF_MAX_SECONDS, and is told how long.
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("AXES_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "tools.people.logins.client_address"
AXES_COOLOFF_MESSAGE = (
    "Слишком много неудачных попыток входа под этим именем с этого адреса: "
    "вход отсюда закрыт на время. Попробуйте позже."
)
GATEWAY_LOGIN_USERNAME_FREE_FAILURES = env.int("GATEWAY_LOGIN_USERNAME_FREE_FAILURES", default=10)
GATEWAY_LOGIN_ADDRESS_FREE_FAILURES = env.int("GATEWAY_LOGIN_ADDRESS_FREE_FAILURES", default=30)
GATEWAY_LOGIN_BACKOFF_MAX_SECONDS = env.int("GATEWAY_LOGIN_BACKOFF_MAX_SECONDS", default=60)
for _name in (
    "GATEWAY_LOGIN_USERNAME_FREE_FAILURES",
    "GATEWAY_LOGIN_ADDRESS_FREE_FAILURES",
    "GATEWAY_LOGIN_BACKOFF_MAX_SECONDS",
):
    if globals()[_name] <= 0:
        raise ImproperlyConfigured(f"{_name} должен быть больше нуля")

# People's second factor (tools/factors). Step-up: deciding a confirmation and widening what
# assistants may do needs a factor checked within GATEWAY_STEP_UP_SECONDS. Required on every
# contour in production (and a production process refuses to start without it); the demo
# requires it only on contours whose owner turned it on (a contour may be stricter, never looser).
GATEWAY_REQUIRE_SECOND_FACTOR = env.bool("GATEWAY_REQUIRE_SECOND_FACTOR", default=PRODUCTION)
if PRODUCTION and not GATEWAY_REQUIRE_SECOND_FACTOR:
    raise ImproperlyConfigured(
        "при GATEWAY_ENV=production GATEWAY_REQUIRE_SECOND_FACTOR нельзя "
        "выключить: деньги не уходят по одному паролю"
    )
GATEWAY_STEP_UP_SECONDS = env.int("GATEWAY_STEP_UP_SECONDS", default=300)
if not 1 <= GATEWAY_STEP_UP_SECONDS <= 3600:
    raise ImproperlyConfigured(
        f"GATEWAY_STEP_UP_SECONDS — от 1 до 3600, а задано {GATEWAY_STEP_UP_SECONDS}"
    )
# A TOTP device prepared for a person by another (manage.py add_totp) must be confirmed by its
# first code within this many seconds; later it is deleted and a new one is prepared.
GATEWAY_PREPARED_DEVICE_SECONDS = env.int("GATEWAY_PREPARED_DEVICE_SECONDS", default=86400)
if not 60 <= GATEWAY_PREPARED_DEVICE_SECONDS <= 30 * 86400:
    raise ImproperlyConfigured(
        "GATEWAY_PREPARED_DEVICE_SECONDS — от 60 до "
        f"2592000, а задано {GATEWAY_PREPARED_DEVICE_SECONDS}"
    )
OTP_TOTP_ISSUER = env.str("GATEWAY_TOTP_ISSUER", default="Шлюз Инвойсбокс")


# Passkeys: the relying party is the site's host name (an IP address cannot be one: then
# "localhost", which browsers treat as secure over plain http). Passwordless login stays off:
# a passkey is the second factor, never a replacement for the password.
def _webauthn_party(site_url: str) -> tuple[str, list[str]]:
    from urllib.parse import urlsplit

    parts = urlsplit(site_url)
    host = parts.hostname or "localhost"
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return host, [f"{parts.scheme}://{parts.netloc}"]
    port = f":{parts.port}" if parts.port else ""
    return "localhost", [f"http://localhost{port}"]


_RP_ID, _RP_ORIGINS = _webauthn_party(GATEWAY_SITE_URL)
OTP_WEBAUTHN_RP_ID = env.str("GATEWAY_WEBAUTHN_RP_ID", default=_RP_ID)
OTP_WEBAUTHN_RP_NAME = env.str("GATEWAY_WEBAUTHN_RP_NAME", default="Шлюз Инвойсбокс")
OTP_WEBAUTHN_ALLOWED_ORIGINS = env.list("GATEWAY_WEBAUTHN_ORIGINS", default=_RP_ORIGINS)
OTP_WEBAUTHN_ALLOW_PASSWORDLESS_LOGIN = False
