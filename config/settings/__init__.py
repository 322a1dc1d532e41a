"""Django settings: every knob is an environment variable with a safe default (see .env.example).

DJANGO_SETTINGS_MODULE stays "config.settings"; each topic has its module here, and a module
imports the values of another it builds on. A production process refuses to start on the first
setting that is missing or unsafe.
"""

from config.settings.environment import *  # noqa: F403
from config.settings.framework import *  # noqa: F403
from config.settings.gateway import *  # noqa: F403
from config.settings.invoicebox import *  # noqa: F403
from config.settings.journal import *  # noqa: F403
from config.settings.operations import *  # noqa: F403
from config.settings.people import *  # noqa: F403
from config.settings.protocols import *  # noqa: F403
from config.settings.tasks import *  # noqa: F403
