"""Django and its libraries: apps, middleware, templates, the database, languages, static
files, DRF and the OpenAPI document."""

from config.settings.environment import BASE_DIR, env

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from here, never a CDN
    # People's second factor (tools/factors): TOTP, backup codes, passkeys.
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
    "django_otp_webauthn",
    "audit",
    "tools",
    "invoicebox",
    "adapters.rest",
    "adapters.mcp",
    "adapters.functions",
    "adapters.text",
    "adapters.oauth",
    "conformance",
    "tools.people.axes_app.AxesInRussian",  # django-axes, named in Russian
]

# The bundled sandbox (a fake Invoicebox) is an app of its own; GATEWAY_SANDBOX=false
# leaves it out: not installed, not routed (its tables, if any, stay untouched).
GATEWAY_SANDBOX = env.bool("GATEWAY_SANDBOX", default=True)
if GATEWAY_SANDBOX:
    INSTALLED_APPS.insert(INSTALLED_APPS.index("invoicebox") + 1, "sandbox")

# Per-contour roles (tools/people/roles.py) are django-rules predicates; ModelBackend for the rest.
# django-axes first: a locked-out username or address gets no further (tools/people/logins.py).
AUTHENTICATION_BACKENDS = [
    "tools.people.logins.RequestOnlyAxesBackend",
    "rules.permissions.ObjectPermissionBackend",
    "django.contrib.auth.backends.ModelBackend",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A widening refused for want of a fresh second factor: to its check and back.
    "tools.people.factors.middleware.StepUpRefusals",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "tools.ops.logs.journaled_refusals_logged_once",
    # Answers a locked-out login with 429 (last, as django-axes requires).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
# Explicit transactions only: a failed call's journal entry must survive.
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# Sync work runs on a fixed pool of GATEWAY_SYNC_THREADS threads (config/asgi.py), so a kept
# connection is reused by the next request on its thread, and their number is bounded. SQLite
# keeps them by default (opening one costs more than the demo's whole read); PostgreSQL keeps
# none unless told (workers x threads connections), or takes them from a pool (DATABASE_POOL).
_IS_SQLITE = DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
DATABASES["default"]["CONN_MAX_AGE"] = env.int(
    "DATABASE_CONN_MAX_AGE", default=600 if _IS_SQLITE else 0
)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env.bool(
    "DATABASE_POOL", default=False
):
    # A pool per process hands a connection over per request (a new PostgreSQL connection
    # costs ~3 ms). Django refuses a pool together with CONN_MAX_AGE.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 2,
        "max_size": env.int("DATABASE_POOL_MAX_SIZE", default=20),
        "timeout": 10,
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Bounded waits (docs/production.md, "Bounded waits on the database"): a frozen or
    # unreachable server, a stuck statement or a held lock becomes a DatabaseError, hence the
    # envelope's 503 and a spooled journal entry, within these bounds instead of as long as
    # the fault lasts. 0 = no bound (a long migration or verify_journal may run with 0).
    _db_options = DATABASES["default"].setdefault("OPTIONS", {})
    _connect = env.int("DATABASE_CONNECT_TIMEOUT_SECONDS", default=5)
    if _connect > 0:
        _db_options.setdefault("connect_timeout", _connect)
    _bounds = {
        "statement_timeout": env.int("DATABASE_STATEMENT_TIMEOUT_SECONDS", default=15),
        "lock_timeout": env.int("DATABASE_LOCK_TIMEOUT_SECONDS", default=5),
    }
    _server_options = " ".join(
        f"-c {name}={seconds * 1000}" for name, seconds in _bounds.items() if seconds > 0
    )
    if _server_options:
        _db_options["options"] = f"{_db_options.get('options', '')} {_server_options}".strip()
# DATABASE_PREPARED_STATEMENTS (PostgreSQL): the statements every call sends (the key and the
# session, the circuit and the budget, the journal's lane and entry) prepared once per
# connection and sent as EXECUTE from then on, their values still quoted by psycopg on the
# client (tools/models/prepared.py: run_prepared). Off by default: not behind a pooler that
# moves a client between server connections (PgBouncer in transaction mode), which would not
# find the statement prepared on the other one (docs/production.md).
DATABASE_PREPARED_STATEMENTS = DATABASES["default"][
    "ENGINE"
] == "django.db.backends.postgresql" and env.bool("DATABASE_PREPARED_STATEMENTS", default=False)
if _IS_SQLITE:
    # Several workers share one SQLite file: wait for the write lock instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            # WAL: readers never wait for the writer; NORMAL: no fsync per commit (a power cut
            # may lose the last commits, never corrupt the file): the demo's database, not prod.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Where /accounts/login/ goes without ?next=: the home page, which lists where each role works.
LOGIN_REDIRECT_URL = "home"


LANGUAGE_CODE = env.str("DJANGO_LANGUAGE_CODE", default="ru")
TIME_ZONE = env.str("DJANGO_TIME_ZONE", default="Europe/Moscow")
USE_I18N = True
# The project's Russian catalog (plural forms, admin messages): read before Django's own.
LOCALE_PATHS = [BASE_DIR / "locale"]
# Formats Django's Russian locale gets wrong (config/formats/ru); the rest stay Django's.
FORMAT_MODULE_PATH = ["config.formats"]
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_RENDERER_CLASSES": ["adapters.rest.renderers.SafeJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["adapters.rest.parsers.StrictJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "adapters.rest.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    # `?format=` names a tool format (tools/formats), not a DRF renderer.
    "URL_FORMAT_OVERRIDE": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Шлюз Инвойсбокс для ИИ-ассистентов — API",
    "DESCRIPTION": "Шлюз между ИИ-ассистентами и API Инвойсбокс: один каталог инструментов, одно ядро.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"persistAuthorization": True, "displayRequestDuration": True},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "adapters.rest.openapi.add_journal_and_schemes",
    ],
}
