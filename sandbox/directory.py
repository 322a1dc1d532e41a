"""The counterparty directory (docs dictionary/counterparty-detail.md): fictional companies by INN."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

from sandbox.calls import Call, repeated_rows
from sandbox.listing import DEFAULT_PAGE_SIZE, bad_query, php_query
from sandbox.responses import SandboxResponse
from sandbox.values import atom, bad_text


@dataclass(frozen=True)
class _Company:
    inn: str
    kpp: str | None  # an ИП (12-digit INN) has none
    name: str
    name_full: str
    registration_number: str  # ОГРН, 13 digits; ОГРНИП, 15 digits
    registration_date: dt.date
    registration_address: str
    post_address: str
    post_address_zip: str
    name_i18n: str | None = None  # docs: the full name "на языке региона"


# [sandbox] a fixed directory of fictional companies: every INN and OGRN has a valid checksum,
# none is meant to be a real one. The first is the reference's example customer. The docs
# answer "a list of organisations" for one INN: АО «Василёк» has a row per KPP, the head
# office's and its Moscow branch's (обособленное подразделение: same INN, its own KPP).
_COMPANIES: tuple[_Company, ...] = (
    _Company(
        inn="7710044140",
        kpp="770201001",
        name="ООО «Ромашка»",
        name_full="Общество с ограниченной ответственностью «Ромашка»",
        registration_number="1027700123450",
        registration_date=dt.date(2002, 9, 12),
        registration_address="Санкт-Петербург, Невский пр. 147",
        post_address="191024, Санкт-Петербург, Невский пр. 147",
        post_address_zip="191024",
    ),
    _Company(
        inn="500123456750",
        kpp=None,
        name="ИП Иванов Иван Иванович",
        name_full="Индивидуальный предприниматель Иванов Иван Иванович",
        registration_number="304500100123451",
        registration_date=dt.date(2004, 3, 15),
        registration_address="Московская обл., г. Подольск",
        post_address="142100, Московская обл., г. Подольск, ул. Ленина, д. 1, кв. 2",
        post_address_zip="142100",
    ),
    _Company(
        inn="7802123458",
        kpp="780201001",
        name="АО «Василёк»",
        name_full="Акционерное общество «Василёк»",
        registration_number="1177847123453",
        registration_date=dt.date(2017, 4, 3),
        registration_address="Санкт-Петербург, ул. Литовская, д. 10, лит. А",
        post_address="194100, Санкт-Петербург, ул. Литовская, д. 10, лит. А",
        post_address_zip="194100",
        name_i18n="Vasilyok JSC",
    ),
    _Company(
        inn="7802123458",
        kpp="770245001",
        name="Московский филиал АО «Василёк»",
        name_full="Московский филиал Акционерного общества «Василёк»",
        registration_number="1177847123453",
        registration_date=dt.date(2019, 2, 11),
        registration_address="г. Москва, ул. Садовая-Кудринская, д. 3",
        post_address="123001, г. Москва, ул. Садовая-Кудринская, д. 3",
        post_address_zip="123001",
        name_i18n="Vasilyok JSC, Moscow branch",
    ),
    _Company(
        inn="5406123450",
        kpp="540601001",
        name="ООО «Лютик»",
        name_full="Общество с ограниченной ответственностью «Лютик»",
        registration_number="1055401123458",
        registration_date=dt.date(2005, 11, 21),
        registration_address="Новосибирск, Красный пр., д. 25, оф. 301",
        post_address="630099, Новосибирск, Красный пр., д. 25, оф. 301",
        post_address_zip="630099",
    ),
    _Company(
        inn="771234567859",
        kpp=None,
        name="ИП Петрова Анна Сергеевна",
        name_full="Индивидуальный предприниматель Петрова Анна Сергеевна",
        registration_number="318774600123452",
        registration_date=dt.date(2018, 6, 1),
        registration_address="г. Москва",
        post_address="125009, г. Москва, а/я 17",
        post_address_zip="125009",
    ),
)
_COMPANIES_BY_INN: dict[str, list[_Company]] = {}
for _row in _COMPANIES:
    _COMPANIES_BY_INN.setdefault(_row.inn, []).append(_row)


def _company_payload(company: _Company) -> dict[str, Any]:
    return {
        # D: string(36); ours is a UUID that is stable per row (INN and KPP).
        "id": str(
            uuid.uuid5(
                uuid.NAMESPACE_URL,
                f"invoicebox-sandbox:counterparty:{company.inn}:{company.kpp or ''}",
            )
        ),
        "vatNumber": company.inn,
        "taxRegistrationReasonCode": company.kpp,
        "name": company.name,
        "nameFull": company.name_full,
        "nameI18n": company.name_i18n,
        "registrationNumber": company.registration_number,
        # [sandbox] a date as an ATOM datetime at midnight UTC, like the API's other dates.
        "registrationDate": atom(
            dt.datetime.combine(company.registration_date, dt.time(), tzinfo=dt.UTC)
        ),
        "registrationAddress": company.registration_address,
        "postAddress": company.post_address,
        "postAddressZip": company.post_address_zip,
    }


def counterparty_detail(call: Call) -> SandboxResponse:
    raw = php_query(call.query).get("vatNumber")
    if not isinstance(raw, str) or not raw:
        raise bad_query("vatNumber", "This value should not be blank.")
    if bad_text(raw):
        raise bad_query("vatNumber", "This value contains characters that are not allowed.")
    # [sandbox] an exact match; an unknown INN (also one with a bad checksum) finds nothing.
    rows = [_company_payload(company) for company in _COMPANIES_BY_INN.get(raw, [])]
    return call.ok(
        {
            "data": repeated_rows(rows, "directory", call.faults),
            "extendedData": [],
            "metaData": {"totalCount": len(rows), "pageSize": DEFAULT_PAGE_SIZE, "page": 1},
        }
    )
