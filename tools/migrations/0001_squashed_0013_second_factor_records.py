"""The tools app's schema as of 0013_second_factor_records in one migration, with no merge
migrations: regenerated from the models, `replaces` naming the old line.

A database that applied the whole old line takes this one as applied; a new one gets the tables
at once. The old line's data steps are not repeated: they changed rows a new database does not
have (stored secrets encrypted, the global groups turned into per-contour roles). A database
stopped part-way through the old line first migrates with the release before this one.
"""

import django.core.validators
import django.db.models.deletion
import django.utils.timezone
import tools.models.contours
import tools.secret_box
import uuid
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    replaces = [
        ('tools', '0001_initial'),
        ('tools', '0002_safety_layer'),
        ('tools', '0003_tracking_and_switches'),
        ('tools', '0004_people_admin'),
        ('tools', '0005_contour_allowed_currencies'),
        ('tools', '0005_contour_custom_mode_encrypted_secrets'),
        ('tools', '0006_merge_currencies_and_secrets'),
        ('tools', '0007_contour_approval_window_and_labels'),
        ('tools', '0007_notification_signature_and_status_dedup'),
        ('tools', '0007_roles_alerts_key_scopes'),
        ('tools', '0008_merge_notifications_and_roles'),
        ('tools', '0009_merge_approval_window'),
        ('tools', '0010_outbox_and_database_clock'),
        ('tools', '0011_key_issuer_and_barred_approvers'),
        ('tools', '0012_contour_api_prefix'),
        ('tools', '0013_second_factor_records'),
    ]

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Contour',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('slug', models.SlugField(max_length=64, unique=True, verbose_name='код')),
                ('name', models.CharField(max_length=200, verbose_name='название')),
                ('mode', models.CharField(choices=[('sandbox', 'песочница (встроенная)'), ('demo', 'демо-магазин Инвойсбокс'), ('production', 'рабочий магазин'), ('custom', 'свой адрес (прокси или тестовый двойник)')], default='sandbox', max_length=16, verbose_name='режим Инвойсбокс')),
                ('base_url', models.URLField(max_length=500, verbose_name='адрес API')),
                ('api_prefix', models.CharField(choices=[('v3', '/v3/ — магазины Инвойсбокс (по умолчанию)'), ('l3', '/l3/ — магазины Инвойсбокс.Бизнес (business.invoicebox.ru)')], default='v3', help_text='/v3/ — для магазинов Инвойсбокс; /l3/ — для магазинов Инвойсбокс.Бизнес (зарегистрированных на business.invoicebox.ru, токен вида «12345-API:…»). Берите тот, что указан в личном кабинете рядом с токеном; смена префикса сбрасывает токен.', max_length=2, verbose_name='префикс API')),
                ('api_token', tools.secret_box.EncryptedTextField(blank=True, verbose_name='токен API')),
                ('merchant_id', models.CharField(max_length=36, verbose_name='идентификатор магазина (merchantId)')),
                ('toolsets', models.JSONField(default=tools.models.contours._default_toolsets, verbose_name='включённые наборы инструментов')),
                ('confirmation_ttl_seconds', models.PositiveIntegerField(default=tools.models.contours._default_confirmation_ttl, verbose_name='срок жизни подтверждения, с')),
                ('dedup_window_seconds', models.PositiveIntegerField(default=tools.models.contours._default_dedup_window, verbose_name='окно защиты от дублей, с')),
                ('approval_window_hours', models.PositiveIntegerField(default=tools.models.contours._default_approval_window, validators=[django.core.validators.MinValueValidator(1)], verbose_name='срок на решение оператора, ч')),
                ('approval_thresholds', models.JSONField(default=tools.models.contours._default_approval_thresholds, verbose_name='порог одобрения оператором, копейки по валютам')),
                ('allowed_currencies', models.JSONField(default=tools.models.contours._default_allowed_currencies, verbose_name='разрешённые валюты записей')),
                ('approval_for_all_writes', models.BooleanField(default=False, verbose_name='все записи только после одобрения оператором')),
                ('require_second_factor', models.BooleanField(default=False, help_text='решения по операциям и расширение прав ассистента требуют свежей проверки вторым фактором, даже если в настройках шлюза это выключено', verbose_name='второй фактор для решений и расширения прав')),
                ('time_zone', models.CharField(default='Europe/Moscow', max_length=64, verbose_name='часовой пояс суточных потолков')),
                ('disabled_tools', models.JSONField(blank=True, default=list, verbose_name='выключенные инструменты')),
                ('notification_key', tools.secret_box.EncryptedTextField(blank=True, verbose_name='ключ подписи уведомлений')),
                ('notification_signature_method', models.CharField(choices=[('hmac', 'HMAC')], default='hmac', max_length=8, verbose_name='метод подписи уведомлений')),
                ('notification_signature_algorithm', models.CharField(choices=[('sha1', 'sha1'), ('sha224', 'sha224'), ('sha256', 'sha256'), ('sha384', 'sha384'), ('sha512', 'sha512'), ('sha3-224', 'sha3-224'), ('sha3-256', 'sha3-256'), ('sha3-384', 'sha3-384'), ('sha3-512', 'sha3-512'), ('md5', 'md5')], default='sha1', help_text='как в настройках уведомлений магазина в личном кабинете Инвойсбокс; по умолчанию sha1', max_length=16, verbose_name='алгоритм подписи уведомлений')),
                ('notify_webhook_url', models.URLField(blank=True, max_length=500, verbose_name='адрес вебхука для операторов')),
                ('notify_webhook_secret', tools.secret_box.EncryptedTextField(blank=True, verbose_name='секрет подписи вебхука')),
                ('key_grace_hours', models.PositiveIntegerField(default=24, verbose_name='старый ключ действует после замены, ч')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='создан')),
            ],
            options={
                'verbose_name': 'контур',
                'verbose_name_plural': 'контуры',
                'constraints': [models.CheckConstraint(condition=models.Q(models.Q(('mode__in', ('demo', 'production')), _negated=True), ('base_url', 'https://api.invoicebox.ru'), _connector='OR'), name='official_modes_use_official_origin')],
            },
        ),
        migrations.CreateModel(
            name='ApiKey',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('label', models.CharField(blank=True, max_length=200, verbose_name='метка')),
                ('prefix', models.CharField(db_index=True, max_length=12, verbose_name='префикс')),
                ('key_hash', models.CharField(max_length=64, unique=True, verbose_name='хеш ключа')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='создан')),
                ('revoked_at', models.DateTimeField(blank=True, null=True, verbose_name='отозван')),
                ('toolsets', models.JSONField(blank=True, default=list, help_text='пусто — все наборы контура', verbose_name='наборы ключа')),
                ('tools', models.JSONField(blank=True, default=list, help_text='пусто — все инструменты его наборов', verbose_name='инструменты ключа')),
                ('expires_at', models.DateTimeField(blank=True, null=True, verbose_name='действует до')),
                ('last_used_at', models.DateTimeField(blank=True, null=True, verbose_name='последний вызов')),
                ('last_used_channel', models.CharField(blank=True, max_length=16, verbose_name='канал последнего вызова')),
                ('last_used_address', models.GenericIPAddressField(blank=True, null=True, verbose_name='адрес последнего вызова')),
                ('issued_by', models.ForeignKey(blank=True, editable=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='выдал')),
                ('user', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='api_keys', to=settings.AUTH_USER_MODEL, verbose_name='владелец ключа')),
                ('contour', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_keys', to='tools.contour', verbose_name='контур')),
            ],
            options={
                'verbose_name': 'ключ API',
                'verbose_name_plural': 'ключи API',
            },
        ),
        migrations.CreateModel(
            name='OutboxTask',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('task', models.CharField(max_length=100, verbose_name='задача')),
                ('args', models.JSONField(default=list, verbose_name='аргументы')),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, verbose_name='создана')),
                ('next_attempt_at', models.DateTimeField(default=django.utils.timezone.now, verbose_name='следующая отправка')),
                ('attempts', models.PositiveIntegerField(default=0, verbose_name='отправок')),
                ('done_at', models.DateTimeField(blank=True, null=True, verbose_name='выполнена')),
            ],
            options={
                'verbose_name': 'задача из outbox',
                'verbose_name_plural': 'задачи из outbox',
                'indexes': [models.Index(fields=['done_at', 'next_attempt_at'], name='outbox_due')],
            },
        ),
        migrations.CreateModel(
            name='PendingConfirmation',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('tool', models.CharField(max_length=64, verbose_name='инструмент')),
                ('arguments', models.JSONField(verbose_name='канонические аргументы')),
                ('args_hash', models.CharField(max_length=64, verbose_name='хеш аргументов')),
                ('summary', models.TextField(verbose_name='сводка')),
                ('summary_data', models.JSONField(default=dict, verbose_name='сводка (данные)')),
                ('token_hash', models.CharField(max_length=64, unique=True, verbose_name='хеш токена')),
                ('status', models.CharField(choices=[('pending', 'ожидает'), ('approved', 'одобрено'), ('rejected', 'отклонено'), ('executed', 'исполнено'), ('expired', 'истекло')], default='pending', max_length=16, verbose_name='статус')),
                ('created_by', models.CharField(blank=True, max_length=200, verbose_name='подготовил')),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, verbose_name='создано')),
                ('expires_at', models.DateTimeField(verbose_name='истекает')),
                ('decided_at', models.DateTimeField(blank=True, null=True, verbose_name='решено')),
                ('decided_by', models.CharField(blank=True, max_length=200, verbose_name='решил')),
                ('decision_reason', models.TextField(blank=True, verbose_name='причина решения')),
                ('factor_kind', models.CharField(blank=True, max_length=16, verbose_name='второй фактор')),
                ('factor_device', models.CharField(blank=True, max_length=200, verbose_name='устройство второго фактора')),
                ('factor_checked_at', models.DateTimeField(blank=True, null=True, verbose_name='второй фактор проверен')),
                ('executed_at', models.DateTimeField(blank=True, null=True, verbose_name='исполнено')),
                ('result', models.JSONField(blank=True, null=True, verbose_name='результат')),
                ('requires_approval', models.BooleanField(default=False, verbose_name='нужно одобрение оператора')),
                ('approval_reason', models.CharField(blank=True, max_length=200, verbose_name='почему нужен оператор')),
                ('amount', models.BigIntegerField(blank=True, null=True, verbose_name='сумма, копейки')),
                ('currency', models.CharField(blank=True, max_length=3, verbose_name='валюта')),
                ('barred_approvers', models.ManyToManyField(blank=True, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='не могут одобрить (выдали ключ или держали его)')),
                ('contour', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='confirmations', to='tools.contour', verbose_name='контур')),
            ],
            options={
                'verbose_name': 'подтверждение',
                'verbose_name_plural': 'подтверждения',
            },
        ),
        migrations.CreateModel(
            name='OperatorAlert',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('waiting', 'ждёт оператора'), ('reminder', 'напоминание перед сроком')], max_length=16, verbose_name='повод')),
                ('transport', models.CharField(choices=[('email', 'письмо'), ('webhook', 'вебхук')], max_length=16, verbose_name='способ')),
                ('recipient', models.CharField(blank=True, max_length=64, verbose_name='получатель')),
                ('state', models.CharField(choices=[('pending', 'ждёт отправки'), ('sent', 'доставлено'), ('failed', 'не доставлено'), ('skipped', 'не понадобилось: решение принято или срок истёк')], default='pending', max_length=16, verbose_name='состояние')),
                ('attempts', models.PositiveIntegerField(default=0, verbose_name='попыток')),
                ('last_error', models.CharField(blank=True, max_length=300, verbose_name='последняя ошибка')),
                ('next_attempt_at', models.DateTimeField(default=django.utils.timezone.now, verbose_name='следующая попытка')),
                ('created_at', models.DateTimeField(auto_now_add=True, verbose_name='создано')),
                ('sent_at', models.DateTimeField(blank=True, null=True, verbose_name='отправлено')),
                ('contour', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='alerts', to='tools.contour')),
                ('confirmation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='alerts', to='tools.pendingconfirmation')),
            ],
            options={
                'verbose_name': 'оповещение оператора',
                'verbose_name_plural': 'оповещения операторов',
            },
        ),
        migrations.CreateModel(
            name='Operation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('key', models.CharField(max_length=64, unique=True, verbose_name='ключ операции')),
                ('tool', models.CharField(max_length=64, verbose_name='инструмент')),
                ('merchant_order_id', models.CharField(max_length=64, unique=True, verbose_name='номер счёта магазина')),
                ('amount', models.BigIntegerField(blank=True, null=True, verbose_name='сумма, копейки')),
                ('currency', models.CharField(blank=True, max_length=3, verbose_name='валюта')),
                ('state', models.CharField(choices=[('in_flight', 'выполняется'), ('done', 'выполнена'), ('failed', 'не выполнена'), ('unknown', 'результат неизвестен')], default='in_flight', max_length=16, verbose_name='состояние')),
                ('attempts', models.PositiveIntegerField(default=0, verbose_name='попыток')),
                ('result', models.JSONField(blank=True, null=True, verbose_name='результат')),
                ('error_code', models.CharField(blank=True, max_length=64, verbose_name='код ошибки')),
                ('upstream_request_id', models.CharField(blank=True, max_length=100, verbose_name='запрос API')),
                ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now, verbose_name='создана')),
                ('started_at', models.DateTimeField(default=django.utils.timezone.now, verbose_name='начата')),
                ('finished_at', models.DateTimeField(blank=True, null=True, verbose_name='завершена')),
                ('contour', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='operations', to='tools.contour', verbose_name='контур')),
                ('confirmation', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='operation', to='tools.pendingconfirmation')),
            ],
            options={
                'verbose_name': 'операция',
                'verbose_name_plural': 'операции',
            },
        ),
        migrations.CreateModel(
            name='ProcessedNotification',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('notification_id', models.CharField(max_length=64)),
                ('order_id', models.CharField(blank=True, max_length=64)),
                ('status', models.CharField(max_length=32)),
                ('answer', models.JSONField(default=dict)),
                ('received_at', models.DateTimeField(auto_now_add=True)),
                ('contour', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='notifications', to='tools.contour', verbose_name='контур')),
            ],
            options={
                'verbose_name': 'уведомление',
                'verbose_name_plural': 'уведомления',
            },
        ),
        migrations.CreateModel(
            name='TrackedOrder',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('order_id', models.CharField(max_length=64)),
                ('merchant_order_id', models.CharField(max_length=256)),
                ('amount', models.BigIntegerField(verbose_name='сумма, копейки')),
                ('currency', models.CharField(max_length=3)),
                ('status', models.CharField(max_length=32)),
                ('paid_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('contour', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='orders', to='tools.contour', verbose_name='контур')),
            ],
            options={
                'verbose_name': 'счёт',
                'verbose_name_plural': 'счета',
            },
        ),
        migrations.CreateModel(
            name='Ceiling',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('per_order', 'максимум одной операции (сумма)'), ('per_day', 'сумма за сутки'), ('per_hour', 'число записей за час')], max_length=16, verbose_name='вид')),
                ('currency', models.CharField(blank=True, help_text='для сумм; у числа записей пусто', max_length=3, verbose_name='валюта')),
                ('limit', models.BigIntegerField(verbose_name='предел (копейки или штуки)')),
                ('contour', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='ceilings', to='tools.contour', verbose_name='контур')),
            ],
            options={
                'verbose_name': 'потолок',
                'verbose_name_plural': 'потолки',
                'constraints': [models.UniqueConstraint(fields=('contour', 'kind', 'currency'), name='one_ceiling_per_kind_and_currency'), models.CheckConstraint(condition=models.Q(('limit__gte', 0)), name='ceiling_not_negative')],
            },
        ),
        migrations.CreateModel(
            name='ContourRole',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('role', models.CharField(choices=[('owner', 'владелец'), ('operator', 'оператор'), ('auditor', 'аудитор')], max_length=16, verbose_name='роль')),
                ('granted_by', models.CharField(blank=True, max_length=200, verbose_name='выдал')),
                ('granted_at', models.DateTimeField(auto_now_add=True, verbose_name='выдана')),
                ('contour', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='roles', to='tools.contour', verbose_name='контур')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='contour_roles', to=settings.AUTH_USER_MODEL, verbose_name='пользователь')),
            ],
            options={
                'verbose_name': 'роль в контуре',
                'verbose_name_plural': 'роли в контурах',
                'indexes': [models.Index(fields=['contour', 'role'], name='tools_conto_contour_b04037_idx')],
                'constraints': [models.UniqueConstraint(fields=('user', 'contour', 'role'), name='one_role_per_user_contour')],
            },
        ),
        migrations.AddIndex(
            model_name='pendingconfirmation',
            index=models.Index(fields=['contour', 'tool', 'args_hash', 'status'], name='tools_pendi_contour_fdd698_idx'),
        ),
        migrations.AddIndex(
            model_name='operatoralert',
            index=models.Index(fields=['state', 'next_attempt_at'], name='tools_opera_state_327c38_idx'),
        ),
        migrations.AddConstraint(
            model_name='operatoralert',
            constraint=models.UniqueConstraint(fields=('confirmation', 'kind', 'transport', 'recipient'), name='one_alert_each'),
        ),
        migrations.AddIndex(
            model_name='operation',
            index=models.Index(fields=['contour', 'created_at'], name='tools_opera_contour_888dab_idx'),
        ),
        migrations.AddConstraint(
            model_name='processednotification',
            constraint=models.UniqueConstraint(fields=('contour', 'notification_id', 'status'), name='one_notification_per_id_and_status'),
        ),
        migrations.AddIndex(
            model_name='trackedorder',
            index=models.Index(fields=['contour', 'status'], name='tools_track_contour_6fd1df_idx'),
        ),
        migrations.AddIndex(
            model_name='trackedorder',
            index=models.Index(fields=['merchant_order_id'], name='tools_track_merchan_347345_idx'),
        ),
        migrations.AddConstraint(
            model_name='trackedorder',
            constraint=models.UniqueConstraint(fields=('contour', 'order_id'), name='one_tracked_order'),
        ),
    ]
