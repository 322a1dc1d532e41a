"""The people tests' fixtures (a logged-in owner) for the services' admin paths."""

from tests.people.conftest import make_user, owner  # noqa: F401 - fixtures, used by name
