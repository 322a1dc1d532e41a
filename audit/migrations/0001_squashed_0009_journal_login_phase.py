"""The audit app's schema as of 0009_journal_login_phase in one migration, with no merge
migrations: regenerated from the models, `replaces` naming the old line.

A database that applied the whole old line takes this one as applied; a new one gets the tables
at once. The old line's data steps are not repeated: they changed rows a new database does not
have (the single journal head split into per-contour chains, the id sequence moved past it). A
database stopped part-way through the old line first migrates with the release before this one.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    replaces = [
        ('audit', '0001_initial'),
        ('audit', '0002_auditor_token_and_configure'),
        ('audit', '0003_journal_status_started'),
        ('audit', '0003_journalentry_key_id'),
        ('audit', '0004_merge_key_id_and_started'),
        ('audit', '0005_auditor_token_contours'),
        ('audit', '0005_journal_chains_per_contour'),
        ('audit', '0005_journal_channel_cli'),
        ('audit', '0006_merge_cli_channel_and_token_contours'),
        ('audit', '0007_merge_journal_chains'),
        ('audit', '0008_journal_channel_without_choices'),
        ('audit', '0009_journal_login_phase'),
    ]

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ChainHead',
            fields=[
                ('chain', models.CharField(blank=True, max_length=80, primary_key=True, serialize=False)),
                ('last_seq', models.BigIntegerField(default=0)),
                ('last_id', models.BigIntegerField(default=0)),
                ('last_hash', models.CharField(default='0000000000000000000000000000000000000000000000000000000000000000', max_length=64)),
            ],
            options={
                'verbose_name': 'вершина цепочки журнала',
            },
        ),
        migrations.CreateModel(
            name='AuditorToken',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('label', models.CharField(blank=True, max_length=200, verbose_name='метка')),
                ('prefix', models.CharField(db_index=True, max_length=12, verbose_name='префикс')),
                ('token_hash', models.CharField(max_length=64, unique=True, verbose_name='хеш токена')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='создан')),
                ('revoked_at', models.DateTimeField(blank=True, null=True, verbose_name='отозван')),
                ('contours', models.JSONField(blank=True, null=True, verbose_name='контуры')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='auditor_tokens', to=settings.AUTH_USER_MODEL, verbose_name='аудитор')),
            ],
            options={
                'verbose_name': 'токен аудитора',
                'verbose_name_plural': 'токены аудиторов',
            },
        ),
        migrations.CreateModel(
            name='JournalEntry',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('at', models.DateTimeField(verbose_name='время')),
                ('contour', models.SlugField(blank=True, db_index=False, max_length=64, verbose_name='контур')),
                ('channel', models.CharField(max_length=16, verbose_name='канал')),
                ('actor', models.CharField(blank=True, max_length=150, verbose_name='кто')),
                ('tool', models.CharField(blank=True, max_length=100, verbose_name='инструмент')),
                ('phase', models.CharField(choices=[('call', 'вызов (отклонён до фазы)'), ('read', 'чтение'), ('prepare', 'подготовка'), ('execute', 'исполнение'), ('approve', 'одобрение'), ('reject', 'отклонение'), ('notify', 'уведомление'), ('configure', 'настройка'), ('login', 'вход человека')], max_length=16, verbose_name='фаза')),
                ('arguments', models.JSONField(blank=True, default=dict, verbose_name='аргументы (без секретов)')),
                ('status', models.CharField(choices=[('ok', 'успешно'), ('started', 'начато'), ('confirmation_required', 'нужно подтверждение'), ('awaiting_approval', 'ждёт одобрения'), ('rejected', 'отклонено'), ('error', 'ошибка')], max_length=32, verbose_name='итог')),
                ('code', models.CharField(blank=True, max_length=64, verbose_name='код')),
                ('message', models.TextField(blank=True, verbose_name='сообщение')),
                ('confirmation_id', models.CharField(blank=True, max_length=64, verbose_name='подтверждение')),
                ('operation_key', models.CharField(blank=True, max_length=128, verbose_name='ключ операции')),
                ('upstream_request_id', models.CharField(blank=True, max_length=128, verbose_name='запрос API')),
                ('upstream_status', models.PositiveSmallIntegerField(blank=True, null=True, verbose_name='HTTP-статус API')),
                ('duration_ms', models.PositiveIntegerField(default=0, verbose_name='длительность, мс')),
                ('key_id', models.CharField(blank=True, db_default='', default='', max_length=32, verbose_name='ключ подписи')),
                ('chain', models.CharField(blank=True, db_default='', default='', max_length=80, verbose_name='цепочка')),
                ('seq', models.BigIntegerField(verbose_name='номер в цепочке')),
                ('form', models.PositiveSmallIntegerField(db_default=1, default=2, verbose_name='форма')),
                ('prev_hash', models.CharField(max_length=64, verbose_name='предыдущий хеш')),
                ('hash', models.CharField(max_length=64, unique=True, verbose_name='хеш')),
            ],
            options={
                'verbose_name': 'запись журнала',
                'verbose_name_plural': 'журнал',
                'indexes': [models.Index(fields=['contour', 'at'], name='audit_entry_contour_at'), models.Index(fields=['at'], name='audit_entry_at'), models.Index(fields=['tool'], name='audit_entry_tool'), models.Index(fields=['status'], name='audit_entry_status'), models.Index(fields=['channel'], name='audit_entry_channel')],
                'constraints': [models.UniqueConstraint(fields=('chain', 'seq'), name='audit_entry_chain_seq')],
            },
        ),
    ]
