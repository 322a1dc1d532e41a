"""Storage of the bundled Invoicebox sandbox: accounts, orders, shipments, refunds, faults.

The tables keep the names they had in the invoicebox app (db_table), so moving the
models here moved no row."""

from __future__ import annotations

import datetime as dt

from django.db import models

from invoicebox import statuses


class SandboxAccount(models.Model):
    """One API token of the sandbox and the merchant (shop) it may act for."""

    # Only the sha256 of the token is kept; the token itself is a secret of the contour.
    token_sha256 = models.CharField(max_length=64, unique=True)
    merchant_id = models.UUIDField(db_index=True)
    user_id = models.UUIDField()
    # The shop-level default of the real integration settings: where payment notifications
    # go when an order names no notificationUrl of its own.
    notification_url = models.CharField(max_length=1000, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "invoicebox_sandboxaccount"  # kept from the invoicebox app
        verbose_name = "sandbox account"

    def __str__(self) -> str:
        return f"{self.merchant_id} ({self.token_sha256[:8]}…)"


class SandboxFaults(models.Model):
    """Fault switches of one account, in the database so that every worker process sees them."""

    account = models.OneToOneField(
        SandboxAccount, on_delete=models.CASCADE, primary_key=True, related_name="faults"
    )
    latency_ms = models.PositiveIntegerField(default=0)
    # A probability, not money: a float is the right type here.
    error_rate = models.FloatField(default=0.0)
    fail_next = models.PositiveIntegerField(default=0)
    drop_response_after_create = models.BooleanField(default=False)
    # The next N requests are answered 429 with Retry-After (never reaching the application).
    rate_limit_next = models.PositiveIntegerField(default=0)
    # The next N requests lose the connection before the application sees them.
    reset_next = models.PositiveIntegerField(default=0)
    # An upstream that lies: an order create is stored, then answered 503, or
    # answered with another order (another merchantOrderId), or its payment notification is
    # sent before the answer (the order is paid at once).
    fail_after_create = models.BooleanField(default=False)
    wrong_order_after_create = models.BooleanField(default=False)
    notify_before_answer = models.BooleanField(default=False)
    # Lists that lie (issue 39.5): every row of every list twice; a pager that is stuck, every
    # page answering the first page's rows (at most LOOP_PAGE_SIZE of them) under the number
    # of the page asked, so only the rows' ids can tell.
    repeat_rows = models.BooleanField(default=False)
    loop_pages = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "invoicebox_sandboxfaults"  # kept from the invoicebox app
        verbose_name = "sandbox faults"
        verbose_name_plural = "sandbox faults"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(error_rate__gte=0.0) & models.Q(error_rate__lte=1.0),
                name="invoicebox_sandbox_faults_error_rate_0_1",
            ),
        ]

    def __str__(self) -> str:
        return f"faults of {self.account_id}"

    @property
    def is_idle(self) -> bool:
        return (
            self.latency_ms == 0
            and self.error_rate == 0.0
            and self.fail_next == 0
            and not self.drop_response_after_create
            and self.rate_limit_next == 0
            and self.reset_next == 0
            and not self.fail_after_create
            and not self.wrong_order_after_create
            and not self.notify_before_answer
            and not self.repeat_rows
            and not self.loop_pages
        )


class SandboxOrder(models.Model):
    """An order (счёт) created in the sandbox; the accepted request is kept verbatim as JSON."""

    class Status(models.TextChoices):
        CREATED = "created"
        COMPLETED = "completed"
        CANCELED = "canceled"
        EXPIRED = "expired"
        HOLD = "hold"
        DRAFT = "draft"

    CANCELABLE = frozenset(map(Status, statuses.OPEN))

    # A sequence for a stable tie-break when two orders share a createdAt second.
    seq = models.BigAutoField(primary_key=True)
    order_id = models.UUIDField(unique=True)
    order_container_id = models.UUIDField(db_index=True)
    merchant_id = models.UUIDField()
    merchant_order_id = models.CharField(max_length=256)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CREATED)
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    vat_amount = models.DecimalField(max_digits=14, decimal_places=2)
    currency_id = models.CharField(max_length=3)
    # All timestamps are whole seconds: the API shows them in ATOM format without fractions,
    # so a filter built from a value the client has seen must match the stored one.
    created_at = models.DateTimeField()
    expiration_date = models.DateTimeField()
    paid_at = models.DateTimeField(null=True, blank=True)
    canceled_at = models.DateTimeField(null=True, blank=True)
    # Paid by a guarantee instrument (guarantee fund, promised payment, overdraft): while no
    # shipment is recorded, DELETE reverses it and returns the money (docs order/delete.md:52-54).
    paid_by_guarantee = models.BooleanField(default=False)
    # The accepted CreateOrderRequest (known fields only) as JSON text with exact decimals.
    request_json = models.TextField()

    class Meta:
        db_table = "invoicebox_sandboxorder"  # kept from the invoicebox app
        verbose_name = "sandbox order"
        constraints = [
            # The race-safe guarantee behind merchant_order_id_duplicate.
            models.UniqueConstraint(
                fields=["merchant_id", "merchant_order_id"],
                name="invoicebox_sandbox_order_merchant_order_id_uniq",
            ),
        ]
        indexes = [models.Index(fields=["merchant_id", "created_at"])]

    def __str__(self) -> str:
        return f"{self.merchant_order_id} ({self.order_id})"

    def effective_status(self, now: dt.datetime) -> str:
        """The status as the API reports it: an unpaid order past its expiry reads `expired`."""
        if self.status == self.Status.CREATED and self.expiration_date <= now:
            return self.Status.EXPIRED
        return self.status


class SandboxMerchantOrderId(models.Model):
    """A merchantOrderId taken by an order of one merchant (refunds have their own namespace,
    SandboxRefund's constraint: docs merchant/refund/create.md:36 makes a refund's number unique
    among refunds). The insert is the race-safe check; numbers are never freed.
    """

    merchant_id = models.UUIDField()
    merchant_order_id = models.CharField(max_length=256)
    # Creates refused because the number was taken: a client that POSTed one order twice.
    repeated_creates = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "invoicebox_sandboxmerchantorderid"  # kept from the invoicebox app
        verbose_name = "sandbox merchant order id"
        constraints = [
            models.UniqueConstraint(
                fields=["merchant_id", "merchant_order_id"],
                name="invoicebox_sandbox_merchant_order_id_uniq",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.merchant_order_id} ({self.merchant_id})"


class SandboxShipment(models.Model):
    """A shipment (отгрузка) of a paid or held order; the accepted request is kept as JSON."""

    class Status(models.TextChoices):
        COMPLETED = "completed"
        CANCELED = "canceled"

    # The API hands out integer shipment ids (docs merchant/order/shipment_create.md).
    id = models.BigAutoField(primary_key=True)
    order = models.ForeignKey(SandboxOrder, on_delete=models.CASCADE, related_name="shipments")
    merchant_id = models.UUIDField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.COMPLETED)
    final = models.BooleanField(default=False)
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    vat_amount = models.DecimalField(max_digits=14, decimal_places=2)
    created_at = models.DateTimeField()
    # The accepted request (known fields only) as JSON text with exact decimals.
    request_json = models.TextField()

    class Meta:
        db_table = "invoicebox_sandboxshipment"  # kept from the invoicebox app
        verbose_name = "sandbox shipment"
        indexes = [models.Index(fields=["merchant_id", "created_at"])]

    def __str__(self) -> str:
        return f"shipment {self.pk} of {self.order_id}"


class SandboxRefund(models.Model):
    """A refund (возврат) of a paid order; the accepted request is kept as JSON."""

    class Status(models.TextChoices):
        DRAFT = "draft"
        CREATED = "created"
        COMPLETED = "completed"
        CANCELED = "canceled"

    seq = models.BigAutoField(primary_key=True)
    refund_id = models.UUIDField(unique=True)
    parent = models.ForeignKey(SandboxOrder, on_delete=models.CASCADE, related_name="refunds")
    merchant_id = models.UUIDField()
    merchant_order_id = models.CharField(max_length=256)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CREATED)
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    vat_amount = models.DecimalField(max_digits=14, decimal_places=2)
    currency_id = models.CharField(max_length=3)
    created_at = models.DateTimeField()
    request_json = models.TextField()

    class Meta:
        db_table = "invoicebox_sandboxrefund"  # kept from the invoicebox app
        verbose_name = "sandbox refund"
        constraints = [
            models.UniqueConstraint(
                fields=["merchant_id", "merchant_order_id"],
                name="invoicebox_sandbox_refund_merchant_order_id_uniq",
            ),
        ]
        indexes = [models.Index(fields=["merchant_id", "created_at"])]

    def __str__(self) -> str:
        return f"{self.merchant_order_id} ({self.refund_id})"
