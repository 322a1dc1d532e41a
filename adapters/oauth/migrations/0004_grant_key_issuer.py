"""A grant's key names its consenting person as issuer (tools 0015 marked every key without
an issuer as issued by a command; a grant's key was issued by a person)."""

from django.db import migrations
from django.db.models import OuterRef, Subquery


def issuer_is_consenting_person(apps, schema_editor):
    ApiKey = apps.get_model("tools", "ApiKey")
    OAuthGrant = apps.get_model("oauth", "OAuthGrant")
    consented = OAuthGrant.objects.filter(key=OuterRef("pk"), consented_by__isnull=False)
    (ApiKey.objects.filter(issued_by__isnull=True, oauth_grant__consented_by__isnull=False)
     .update(issued_by=Subquery(consented.values("consented_by")[:1]),
             issued_by_command=False))


class Migration(migrations.Migration):

    dependencies = [
        ("oauth", "0003_client_registered_from"),
        ("tools", "0015_people_powers_and_prepared_devices"),
    ]

    operations = [
        migrations.RunPython(issuer_is_consenting_person, migrations.RunPython.noop),
    ]
