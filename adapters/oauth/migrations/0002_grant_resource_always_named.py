"""Grants consented before every grant named its resource get this server's /mcp: their tokens
are now checked against the resource they are presented to (grants.find_access)."""

from django.conf import settings
from django.db import migrations


def name_resource(apps, schema_editor) -> None:  # noqa: ANN001 - migration signature
    grant = apps.get_model("oauth", "OAuthGrant")
    grant.objects.filter(resource="").update(resource=f"{settings.GATEWAY_SITE_URL}/mcp")


class Migration(migrations.Migration):
    dependencies = [("oauth", "0001_grants_codes_tokens")]
    operations = [migrations.RunPython(name_resource, migrations.RunPython.noop)]
