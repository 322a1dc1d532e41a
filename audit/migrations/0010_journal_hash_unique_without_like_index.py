"""The journal's hash stays unique through a named constraint instead of unique=True.

On PostgreSQL unique=True on a varchar also made a varchar_pattern_ops ("_like") index, which
no query of a hash uses and every append paid for. There the existing unique index is only
renamed and the _like index dropped: no index is rebuilt, however long the journal. Other
databases take the ordinary operations (SQLite rebuilds the table).
"""

from typing import Any

from django.db import migrations, models

ALTER = migrations.AlterField(model_name="journalentry", name="hash",
                              field=models.CharField(max_length=64, verbose_name="хеш"))
ADD = migrations.AddConstraint(
    model_name="journalentry",
    constraint=models.UniqueConstraint(fields=("hash",), name="audit_entry_hash"))
NEW_NAME = "audit_entry_hash"
OLD_NAME = "audit_journalentry_hash_key"  # PostgreSQL's name for the column's UNIQUE


class HashUniqueWithoutLikeIndex(migrations.operations.base.Operation):
    reduces_to_sql = True
    reversible = True

    def state_forwards(self, app_label: str, state: Any) -> None:
        ALTER.state_forwards(app_label, state)
        ADD.state_forwards(app_label, state)

    def _between(self, app_label: str, from_state: Any) -> Any:
        middle = from_state.clone()
        ALTER.state_forwards(app_label, middle)
        return middle

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any,
                          to_state: Any) -> None:
        if schema_editor.connection.vendor != "postgresql":
            middle = self._between(app_label, from_state)
            ALTER.database_forwards(app_label, schema_editor, from_state, middle)
            ADD.database_forwards(app_label, schema_editor, middle, to_state)
            return
        model = from_state.apps.get_model(app_label, "journalentry")
        table, field = model._meta.db_table, model._meta.get_field("hash")
        [unique] = schema_editor._constraint_names(model, [field.column], unique=True,
                                                   primary_key=False)
        like = schema_editor._create_index_name(table, [field.column], suffix="_like")
        q = schema_editor.quote_name
        schema_editor.execute(f"ALTER TABLE {q(table)} RENAME CONSTRAINT {q(unique)} "
                              f"TO {q(NEW_NAME)}")
        schema_editor.execute(f"DROP INDEX IF EXISTS {q(like)}")

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any,
                           to_state: Any) -> None:
        if schema_editor.connection.vendor != "postgresql":
            middle = self._between(app_label, to_state)
            ADD.database_backwards(app_label, schema_editor, from_state, middle)
            ALTER.database_backwards(app_label, schema_editor, middle, to_state)
            return
        model = to_state.apps.get_model(app_label, "journalentry")
        table, field = model._meta.db_table, model._meta.get_field("hash")
        q = schema_editor.quote_name
        schema_editor.execute(f"ALTER TABLE {q(table)} RENAME CONSTRAINT {q(NEW_NAME)} "
                              f"TO {q(OLD_NAME)}")
        schema_editor.execute(schema_editor._create_like_index_sql(model, field))

    def describe(self) -> str:
        return "Journal hash unique through the constraint audit_entry_hash, no _like index"


class Migration(migrations.Migration):

    dependencies = [
        ("audit", "0001_squashed_0009_journal_login_phase"),
    ]

    operations = [HashUniqueWithoutLikeIndex()]
