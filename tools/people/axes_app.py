"""django-axes (the login throttle, tools/people/login_guard.py) under a Russian name: the
admin's index showed its section as «AXES» among Russian ones."""

from axes.apps import AppConfig as AxesAppConfig


class AxesInRussian(AxesAppConfig):
    verbose_name = "Блокировки входа"
