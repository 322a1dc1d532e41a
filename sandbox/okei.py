"""OKEI signs the sandbox knows, to refuse a `measure` that doesn't match its `measureCode`.

Codes and signs of the docs' table (docs/dictionary/okei.md), plus the codes the official MCP
server and the gateway use that the table omits, with their signs from the Rosstat classifier
the vendor's WooCommerce plugin bundles (vendor/onepix/invoicebox_sdk/resources/okei.json).
A code with two signs there ("сут; дн") accepts either. Matching is exact: "шт." is not "шт".
"""

from __future__ import annotations

OKEI_SIGNS: dict[str, frozenset[str]] = {
    code: frozenset(signs.split("|"))
    for code, signs in {
        # docs/dictionary/okei.md
        "796": "шт", "003": "мм", "004": "см", "005": "дм", "006": "м", "008": "км",
        "009": "Мм", "018": "пог. м", "020": "усл. м", "039": "дюйм", "041": "фут",
        "043": "ярд", "047": "миля", "050": "мм2", "051": "см2", "053": "дм2", "055": "м2",
        "059": "га", "061": "км2", "071": "дюйм2", "073": "фут2", "075": "ярд2", "109": "а",
        "110": "мм3", "111": "см3", "112": "л", "113": "м3", "118": "дл", "122": "гл",
        "126": "Мл", "131": "дюйм3", "132": "фут3", "133": "ярд3", "159": "м3", "160": "гг",
        "161": "мг", "162": "кар", "163": "г", "166": "кг", "168": "т", "170": "кт",
        "173": "сг", "181": "БРТ", "185": "т", "206": "ц",
        # Rosstat OKEI (okei.json above)
        "356": "ч", "359": "сут|дн", "362": "мес", "366": "г|лет", "625": "л.",
        "704": "набор", "715": "пар", "736": "рул", "778": "упак", "839": "компл",
    }.items()
}


def measure_mismatch(measure: str, code: str) -> str:
    """Why `measure` is not a sign of `code` ('' when it is, or when the code is unknown)."""
    signs = OKEI_SIGNS.get(code)
    if signs is None or measure in signs:
        return ""
    return f"The measure does not match OKEI code {code} ({', '.join(sorted(signs))})."
