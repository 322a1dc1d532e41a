"""One hash chain per contour instead of one global chain (see docs/production.md).

Existing entries stay exactly as they were hashed (form 1, the id in the hashed form) and form
the chain "" with seq = id; the old single head becomes that chain's head. New entries of no
contour continue that chain; each contour starts a chain of its own. Entry ids now come from
the table's sequence, which PostgreSQL must first move past the ids the head handed out.
"""

from django.core.management.color import no_style
from django.db import migrations, models


def copy_head(apps, schema_editor):
    old = apps.get_model("audit", "JournalHead").objects.filter(pk=1).first()
    if old is not None and old.last_id:
        apps.get_model("audit", "ChainHead").objects.create(
            chain="", last_seq=old.last_id, last_id=old.last_id, last_hash=old.last_hash)


def reset_id_sequence(apps, schema_editor):
    entry = apps.get_model("audit", "JournalEntry")
    connection = schema_editor.connection
    for statement in connection.ops.sequence_reset_sql(no_style(), [entry]):
        schema_editor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ("audit", "0004_merge_key_id_and_started"),
    ]

    operations = [
        migrations.AddField(
            model_name="journalentry",
            name="chain",
            field=models.CharField(blank=True, db_default="", default="", max_length=80,
                                   verbose_name="цепочка"),
        ),
        migrations.AddField(
            model_name="journalentry",
            name="form",
            field=models.PositiveSmallIntegerField(db_default=1, default=2, verbose_name="форма"),
        ),
        migrations.AddField(
            model_name="journalentry",
            name="seq",
            field=models.BigIntegerField(null=True, verbose_name="номер в цепочке"),
        ),
        migrations.RunSQL("UPDATE audit_journalentry SET seq = id", migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="journalentry",
            name="seq",
            field=models.BigIntegerField(verbose_name="номер в цепочке"),
        ),
        migrations.AddConstraint(
            model_name="journalentry",
            constraint=models.UniqueConstraint(fields=("chain", "seq"),
                                               name="audit_entry_chain_seq"),
        ),
        migrations.CreateModel(
            name="ChainHead",
            fields=[
                ("chain", models.CharField(blank=True, max_length=80, primary_key=True,
                                           serialize=False)),
                ("last_seq", models.BigIntegerField(default=0)),
                ("last_id", models.BigIntegerField(default=0)),
                ("last_hash", models.CharField(
                    default="0000000000000000000000000000000000000000000000000000000000000000",
                    max_length=64)),
            ],
            options={"verbose_name": "вершина цепочки журнала"},
        ),
        migrations.RunPython(copy_head, migrations.RunPython.noop),
        migrations.DeleteModel(name="JournalHead"),
        migrations.RunPython(reset_id_sequence, migrations.RunPython.noop),
    ]
