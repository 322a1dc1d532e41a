"""manage.py conformance <target>: prove one platform end to end; exit 0 only if every step passed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.actors import SCAFFOLDING
from conformance import assistants, invoicebox, mcp_targets
from conformance.gateway import GatewayLink, KitError, link
from conformance.report import Report, default_path
from tools.contours.services import ContourSetupError, create_contour
from tools.models import Contour, InvoiceboxMode

INVOICEBOX = ("invoicebox-demo", "invoicebox-production")
MODELS = (
    "gigachat",
    "gigachat-v2",
    "yandexgpt",
    "yandexgpt-openai",
    *assistants.OPENAI_SDK_TARGETS,
    "hermes",
)
MCP = ("mcp-http", "mcp-stdio")
TARGETS = (*INVOICEBOX, *MODELS, *MCP)
# Contours the kit makes for itself when --contour is not given.
OWN_CONTOUR = {"invoicebox-demo": ("conformance-demo", InvoiceboxMode.DEMO)}
SANDBOX_CONTOUR = ("conformance", InvoiceboxMode.SANDBOX)


class Command(BaseCommand):
    help = (
        "Сквозная проверка платформы на живом ключе: шаги через те же эндпоинты, что у "
        "пользователей; отчёт JSON без секретов."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("target", choices=TARGETS)
        parser.add_argument("--contour", default="", help="slug контура (по умолчанию свой)")
        parser.add_argument(
            "--report",
            default="",
            help="путь отчёта JSON (по умолчанию docs/conformance/<target>-<дата>.json)",
        )
        parser.add_argument(
            "--gateway-url",
            default="",
            help="работающий шлюз с той же базой; без него шлюз поднимается "
            "на 127.0.0.1 на время проверки",
        )
        parser.add_argument(
            "--allow-write",
            action="store_true",
            help="разрешить записи (выставить и отменить проверочный счёт) на "
            "контуре не в режиме sandbox; кит подтверждает их сам",
        )
        parser.add_argument(
            "--model", default="", help="модель (hermes, yandexgpt-openai, цели через openai SDK)"
        )
        parser.add_argument("--model-url", default="", help="hermes: OpenAI-совместимый сервер")

    def handle(self, *args: Any, **options: Any) -> None:
        target: str = options["target"]
        report = Report(target=target)
        try:
            contour = self._contour(target, options["contour"])
            report.contour_mode = contour.mode
            with link(contour, target, options["gateway_url"]) as gateway:
                health = gateway.health()
                report.gateway_version = str(health.get("version", ""))
                report.catalog_fingerprint = str(
                    (health.get("catalog") or {}).get("fingerprint", "")
                )
                try:
                    self._run(target, report, gateway, options)
                except KitError:
                    raise
                except Exception as error:  # the platform's own failure is the finding
                    report.add(
                        "platform answered",
                        False,
                        f"{type(error).__name__}: {error}",
                        secrets=[gateway.key, contour.api_token],
                    )
        except KitError as error:
            raise CommandError(str(error)) from None
        path = Path(options["report"]) if options["report"] else default_path(target, report.date)
        report.write(path)
        if report.platform.get("writes"):
            self.stdout.write(report.platform["writes"])
        for step in report.steps:
            self.stdout.write(f"{step.verdict:7} {step.name}: {step.detail}")
        self.stdout.write(f"отчёт: {path} (отпечаток {report.fingerprint()})")
        if not report.passed:
            raise CommandError(f"{target}: проверка не пройдена")

    def _run(
        self, target: str, report: Report, gateway: GatewayLink, options: dict[str, Any]
    ) -> None:
        # Every target that writes: only with --allow-write off the sandbox (models never get
        # there: _contour refuses them any other contour).
        allow_write = invoicebox.may_write(gateway.contour.mode, options["allow_write"])
        if target in INVOICEBOX:
            report.platform = {"api": "Invoicebox API v3", "base_url": gateway.contour.base_url}
            invoicebox.run(report, gateway, allow_write=allow_write)
        elif target in MCP:
            mcp_targets.run(report, gateway, target.removeprefix("mcp-"), allow_write=allow_write)
        else:
            converse, user = self._assistant(target, report, gateway, options)
            assistants.converse_and_check(report, gateway, converse, user)
        if allow_write:
            report.platform["writes"] = invoicebox.SELF_CONFIRMED

    @staticmethod
    def _assistant(
        target: str, report: Report, gateway: GatewayLink, options: dict[str, Any]
    ) -> Any:
        if target.startswith("gigachat"):
            return assistants.gigachat(gateway, report, "v2" if target == "gigachat-v2" else "v1")
        if target == "yandexgpt":
            return assistants.yandexgpt(gateway, report)
        if target == "hermes":
            return assistants.hermes(gateway, report, options["model_url"], options["model"])
        if target == "yandexgpt-openai":
            return assistants.yandexgpt_openai(gateway, report, options["model"])
        return assistants.openai_sdk(
            gateway, report, assistants.OPENAI_SDK_TARGETS[target], options["model"]
        )

    @staticmethod
    def _contour(target: str, slug: str) -> Contour:
        if slug:
            contour = Contour.objects.filter(slug=slug).first()
            if contour is None:
                raise KitError(f"контур {slug!r} не найден")
        elif target == "invoicebox-production":
            raise KitError("invoicebox-production: укажите --contour <slug> контура production")
        else:
            own_slug, mode = OWN_CONTOUR.get(target, SANDBOX_CONTOUR)
            contour = Contour.objects.filter(slug=own_slug).first()
            if contour is None:
                try:
                    contour = create_contour(
                        own_slug, mode=mode, toolsets=["read", "write"], actor=SCAFFOLDING
                    )
                except ContourSetupError as error:
                    raise KitError(str(error)) from None
        invoicebox.check_contour_mode(target, contour.mode)
        if target in MODELS and contour.mode != InvoiceboxMode.SANDBOX:
            # A model decides the arguments: it writes only where no money can move.
            raise KitError(
                f"{target}: модель проверяется только на песочном контуре "
                f"(режим sandbox), а {contour.slug!r} в режиме {contour.mode}"
            )
        return contour
