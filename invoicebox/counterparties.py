"""Counterparties: the Invoicebox directory of companies by INN."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

from invoicebox.shapes import Text, Upstream
from invoicebox.transport import Transport


class UpstreamCompany(Upstream):
    id: Text | None = None
    vat_number: Text | None = Field(None, alias="vatNumber")
    tax_registration_reason_code: Text | None = Field(None, alias="taxRegistrationReasonCode")
    name: str | None = None
    name_full: str | None = Field(None, alias="nameFull")
    name_i18n: str | None = Field(None, alias="nameI18n")
    registration_number: Text | None = Field(None, alias="registrationNumber")
    registration_date: str | None = Field(None, alias="registrationDate")
    registration_address: str | None = Field(None, alias="registrationAddress")
    post_address: str | None = Field(None, alias="postAddress")
    post_address_zip: Text | None = Field(None, alias="postAddressZip")


@dataclass(frozen=True)
class Company:
    """A counterparty from the Invoicebox directory (by INN); an ИП has no KPP."""

    id: str | None
    inn: str | None
    kpp: str | None
    name: str | None
    name_full: str | None
    registration_number: str | None
    registration_date: str | None
    registration_address: str | None
    post_address: str | None
    post_address_zip: str | None
    name_i18n: str | None = None

    @classmethod
    def parse(cls, raw: Any) -> Company:
        up = UpstreamCompany.model_validate(raw)
        return cls(
            id=up.id,
            inn=up.vat_number,
            kpp=up.tax_registration_reason_code or None,
            name=up.name,
            name_full=up.name_full,
            registration_number=up.registration_number,
            registration_date=up.registration_date,
            registration_address=up.registration_address,
            post_address=up.post_address,
            post_address_zip=up.post_address_zip,
            name_i18n=up.name_i18n,
        )


class CounterpartiesApi(Transport):
    def lookup_company(self, inn: str) -> list[Company]:
        """The directory's rows for an INN; an unknown INN is an empty list, not an error."""
        data, _ = self._request(
            "GET", "/filter/api/counterparty-detail", params=[("vatNumber", inn)]
        )
        rows = self._rows(data, "реквизиты пришли не массивом")
        companies = [self._parse(Company.parse, row, "реквизиты компании") for row in rows]
        self._refuse_repeats(companies, "реквизиты {} пришли в списке дважды")
        return companies
