"""The admin per contour: an owner sees and changes only the rows of contours they own.

Querysets are filtered by the owner's contours, and an object outside them is a 404 (the
same answer as one that does not exist: no probing for another owner's contours). Per-object
checks go through the django-rules permissions of tools/people/roles.py.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import Http404, HttpRequest
from django.utils import timezone

from audit.actors import user_actor
from tools import catalog
from tools.models import ApiKey, Contour, ContourRole, Role
from tools.people import grants as role_service
from tools.people import roles
from tools.people.factors import stepup


class ContourFilter(admin.SimpleListFilter):
    """A record's contour, the choices read from the contours table (the user's own), never
    off the records (a DISTINCT over a table that only grows)."""

    title = "контур"
    parameter_name = "contour__id__exact"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        contours = roles.contours_for(request.user, Role.OWNER).order_by("slug")
        return [(str(pk), slug) for pk, slug in contours.values_list("pk", "slug")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if value is None else queryset.filter(contour_id=value)


class ToolFilter(admin.SimpleListFilter):
    """A record's tool, the choices from the catalog."""

    title = "инструмент"
    parameter_name = "tool__exact"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(name, name) for name in catalog.names()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if value is None else queryset.filter(tool=value)


contour_filter = ContourFilter


class OwnerScoped:
    """Mixin for ModelAdmins of a contour's records (or of Contour itself: contour_path pk)."""

    contour_path = "contour"

    def _contour_of(self, obj: Model | None) -> Contour | None:
        if obj is None:
            return None
        return obj if isinstance(obj, Contour) else getattr(obj, "contour", None)

    def _perm(self, request: HttpRequest, action: str, obj: Model | None) -> bool:
        opts = self.model._meta  # type: ignore[attr-defined]
        return request.user.has_perm(
            f"{opts.app_label}.{action}_{opts.model_name}", self._contour_of(obj)
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        qs = super().get_queryset(request)  # type: ignore[misc]
        if request.user.is_superuser:
            return qs
        owned = roles.contours_for(request.user, Role.OWNER).values("pk")
        return qs.filter(**{f"{self.contour_path}__in": owned})

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Any:
        obj = super().get_object(request, object_id, from_field)  # type: ignore[misc]
        if obj is None:
            raise Http404("нет такого объекта среди ваших контуров")
        return obj

    def has_module_permission(self, request: HttpRequest) -> bool:
        return roles.has_role(request.user, None, Role.OWNER)

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return (
            super().has_view_permission(request, obj)  # type: ignore[misc]
            and self._perm(request, "view", obj)
        )

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return (
            super().has_change_permission(request, obj)  # type: ignore[misc]
            and self._perm(request, "change", obj)
        )

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        if self.model is Contour:  # type: ignore[attr-defined]
            # An owner may start another contour and owns it (ContourAdmin.save_model).
            return roles.has_role(request.user, None, Role.OWNER)
        return (
            super().has_add_permission(request, *args)  # type: ignore[misc]
            and self._perm(request, "add", None)
        )


class ContourRoleForm(forms.ModelForm):
    # Asked where the role is given: an operator without an address is never alerted.
    email = forms.EmailField(
        label="почта", required=False, help_text="куда приходят оповещения; оператору обязательна"
    )

    class Meta:
        model = ContourRole
        fields = ("user", "role", "email")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.user_id:
            self.fields["email"].initial = self.instance.user.email

    def clean(self) -> dict[str, Any]:
        super().clean()  # Django's returns self.cleaned_data (typed as maybe None)
        data = self.cleaned_data
        user, email = data.get("user"), data.get("email") or ""
        # Asked when a role is given or changed; a row left as it was never blocks a save
        # (the contour page warns about it instead).
        if (
            self.has_changed()
            and data.get("role") == Role.OPERATOR
            and user is not None
            and not (email or user.email)
        ):
            self.add_error(
                "email",
                f"у {user.get_username()} нет почты: без неё оператор не "
                "узнает о записях, ждущих его решения",
            )
        return data


class ContourRoleInline(admin.TabularInline):
    """Who holds which role on this contour; only superusers grant and revoke here (owners
    read it). Saving goes through tools.people.grants, so each change is journaled."""

    model = ContourRole
    form = ContourRoleForm
    extra = 0
    fields = ("user", "role", "email", "granted_by", "granted_at")
    readonly_fields = ("granted_by", "granted_at")
    verbose_name_plural = "люди контура: владельцы, операторы, аудиторы"

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return roles.has_role(request.user, obj, Role.OWNER)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)


def save_role_formset(request: HttpRequest, formset: Any, contour: Contour) -> None:
    """The role inline's changes as journaled grants and revokes, never raw saves."""
    by = user_actor(request.user)
    # What the admin's own history message reads (our journal entries say the rest).
    formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
    for form in formset.deleted_forms:
        if form.instance.pk:
            role_service.revoke(form.instance.user, form.instance.role, contour, actor=by)
    for form in formset.forms:
        if form in formset.deleted_forms or not form.has_changed() or not form.is_valid():
            continue
        data = form.cleaned_data
        if not data.get("user") or not data.get("role"):
            continue
        if form.instance.pk:
            stored = ContourRole.objects.get(pk=form.instance.pk)
            if (stored.user_id, stored.role) == (data["user"].pk, data["role"]):
                # Only the address changed: the role stays as granted.
                role_service.grant(
                    stored.user, stored.role, contour, actor=by, email=data.get("email") or ""
                )
                continue
            role_service.revoke(stored.user, stored.role, contour, actor=by)
        role_service.grant(
            data["user"],
            data["role"],
            contour,
            actor=by,
            step_up=stepup.of_request(request),
            email=data.get("email") or "",
        )


@admin.display(description="последний вызов")
def key_last_use(self: Any, obj: ApiKey) -> str:
    if obj.last_used_at is None:
        return "не было"
    when = timezone.localtime(obj.last_used_at)
    parts = [f"{when:%d.%m.%Y %H:%M}", obj.last_used_channel, obj.last_used_address or ""]
    return ", ".join(part for part in parts if part)
