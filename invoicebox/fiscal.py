"""The basket item's fiscal vocabulary beyond service/commodity: the tag-1212 codes the docs list
(D dictionary/tag1212.md, table 101 of the fiscal data formats) and the product groups of the
Честный знак marking system (D merchant/honest-sign.md). One home for the gateway and the
sandbox; docs/invoicebox-api.md, "Capabilities"."""

from __future__ import annotations

from typing import Final, Literal

# Tag-1212 code -> the short sign a receipt may print for it (the docs' third column). There
# is no 28 or 29 in the docs' table.
TAG_1212: dict[int, str] = {
    1: "Т",
    2: "АТ",
    3: "Р",
    4: "У",
    5: "СА",
    6: "ВА",
    7: "СЛ",
    8: "ВЛ",
    9: "РИД",
    10: "П",
    11: "АВ",
    12: "В",
    13: "ИПР",
    14: "ИМУЩЕСТВЕННОЕ ПРАВО",
    15: "ВНЕРЕАЛИЗАЦИОННЫЙ ДОХОД",
    16: "ИНЫЕ ПЛАТЕЖИ И ВЗНОСЫ",
    17: "ТОРГОВЫЙ СБОР",
    18: "КУРОРТНЫЙ СБОР",
    19: "ЗАЛОГ",
    20: "РАСХОД",
    21: "ВЗНОСЫ НА ОПС ИП",
    22: "ВЗНОСЫ НА ОПС",
    23: "ВЗНОСЫ НА ОМС ИП",
    24: "ВЗНОСЫ НА ОМС",
    25: "ВЗНОСЫ НА ОСС",
    26: "ПК",
    27: "ВЫДАЧА ДС",
    30: "АТНМ",
    31: "АТМ",
    32: "ТНМ",
    33: "ТМ",
}
# Codes of excisable goods (2, 30, 31: «подакцизный товар»), where an excise sum belongs.
EXCISABLE = frozenset({2, 30, 31})

# categoryType (D create.md BasketItem): the shop's own category map or Честный знак's groups.
CategoryType = Literal["honestSign", "merchantHonestSignMap"]
HONEST_SIGN: Final = "honestSign"
CATEGORY_TYPES: tuple[CategoryType, ...] = (HONEST_SIGN, "merchantHonestSignMap")
# Честный знак's product groups the docs list as supported (merchant/honest-sign.md).
HONEST_SIGN_GROUPS = frozenset(
    {
        "lp",
        "shoes",
        "tobacco",
        "perfumery",
        "tires",
        "electronics",
        "milk",
        "bicycle",
        "wheelchairs",
        "otp",
        "water",
        "furs",
        "beer",
        "ncp",
        "bio",
        "antiseptic",
        "seafood",
        "nabeer",
        "softdrinks",
    }
)


def item_type_code(value: object) -> int | None:
    """A tag-1212 code given as an int or a digit string (the docs: string(10) or int)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value in TAG_1212 else None
    if isinstance(value, str) and value.isdecimal() and len(value) <= 2:
        return int(value) if int(value) in TAG_1212 else None
    return None
