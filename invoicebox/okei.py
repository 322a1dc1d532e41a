"""The one table of OKEI units (measureCode and its sign `measure`), each with its witness.

The gateway sends `sign` with `code` (tools/params.py reads this table); the bundled sandbox
accepts `sign` and every sign in `also` for `code` (sandbox/okei.py reads it too). Witnesses:
D = InvoiceBox/docs @ 85d866e `docs/dictionary/okei.md` (line); MCP = the vendor's MCP server
@ 4b62bec `src/registry/units.ts` (line); WC = Rosstat OKEI bundled by the WooCommerce plugin
(`vendor/onepix/invoicebox_sdk/resources/okei.json`); BX = the Bitrix module @ 18a43ba
(`lang/ru/handler.php:25`, default `шт.`, sent in production).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OkeiUnit:
    code: str
    sign: str  # the sign sent as `measure`
    witness: str
    also: tuple[str, ...] = ()  # other signs vendor code sends with this code


def _docs(
    line: int, code: str, sign: str, *, also: tuple[str, ...] = (), more: str = ""
) -> OkeiUnit:
    return OkeiUnit(code, sign, f"D okei.md:{line}" + (f"; {more}" if more else ""), also)


UNITS: tuple[OkeiUnit, ...] = (
    # The docs' table, every row (45 codes).
    _docs(18, "796", "шт", also=("шт.",), more="MCP units.ts:3; BX `шт.`"),
    _docs(25, "003", "мм"),
    _docs(26, "004", "см"),
    _docs(27, "005", "дм"),
    _docs(28, "006", "м"),
    _docs(29, "008", "км"),
    _docs(30, "009", "Мм"),
    _docs(31, "018", "пог. м", more="MCP units.ts:8"),
    _docs(32, "020", "усл. м"),
    _docs(33, "039", "дюйм"),
    _docs(34, "041", "фут"),
    _docs(35, "043", "ярд"),
    _docs(36, "047", "миля"),
    _docs(43, "050", "мм2"),
    _docs(44, "051", "см2"),
    _docs(45, "053", "дм2"),
    _docs(46, "055", "м2"),
    _docs(47, "059", "га"),
    _docs(48, "061", "км2"),
    _docs(49, "071", "дюйм2"),
    _docs(50, "073", "фут2"),
    _docs(51, "075", "ярд2"),
    _docs(52, "109", "а"),
    _docs(59, "110", "мм3"),
    _docs(60, "111", "см3"),
    _docs(61, "112", "л"),
    _docs(62, "113", "м3"),
    _docs(63, "118", "дл"),
    _docs(64, "122", "гл"),
    _docs(65, "126", "Мл"),
    _docs(66, "131", "дюйм3"),
    _docs(67, "132", "фут3"),
    _docs(68, "133", "ярд3"),
    _docs(69, "159", "м3"),
    _docs(76, "160", "гг"),
    _docs(77, "161", "мг"),
    _docs(78, "162", "кар"),
    _docs(79, "163", "г"),
    _docs(80, "166", "кг"),
    _docs(81, "168", "т"),
    _docs(82, "170", "кт"),
    _docs(83, "173", "сг"),
    _docs(84, "181", "БРТ"),
    _docs(85, "185", "т"),
    _docs(86, "206", "ц"),
    # Codes the docs' table omits: the Rosstat sign; the vendor's own pairs accepted too.
    OkeiUnit("356", "ч", "WC okei.json; MCP units.ts:15"),
    OkeiUnit("359", "сут", "WC okei.json (`сут; дн`); MCP units.ts:16", also=("дн",)),
    OkeiUnit("362", "мес", "WC okei.json; MCP units.ts:17"),
    OkeiUnit(
        "366",
        "лет",
        "WC okei.json:1532-1534 (`г;^лет`); MCP units.ts:18 sends `год`",
        also=("г", "год"),
    ),
    OkeiUnit("625", "л.", "WC okei.json:1723-1725"),
    OkeiUnit("704", "набор", "WC okei.json; MCP units.ts:19 sends `компл`", also=("компл",)),
    OkeiUnit("715", "пар", "WC okei.json"),
    OkeiUnit("736", "рул", "WC okei.json; MCP units.ts:20"),
    OkeiUnit("778", "упак", "WC okei.json; MCP units.ts:21"),
    OkeiUnit("839", "компл", "WC okei.json; MCP units.ts:22"),
)

BY_CODE: dict[str, OkeiUnit] = {unit.code: unit for unit in UNITS}
