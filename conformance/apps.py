from django.apps import AppConfig


class ConformanceConfig(AppConfig):
    name = "conformance"
    verbose_name = "Проверка совместимости"
