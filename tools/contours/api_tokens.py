"""An Invoicebox API token as a person gives it: typed, pasted or read from a file.

One home for what is stripped (a UTF-8 BOM that Windows Notepad writes, spaces, line endings)
and what is refused (control characters, spaces inside, letters outside ASCII: an HTTP header
can't carry them, so such a token would fail on every call). The format itself is left
lenient: v3 tokens are 32 hex digits (docs/invoicebox-api.md, the demo shop's), /l3/ ones
«12345-API:…», the bundled sandbox's «sbx_…»; a proxy may use its own.
"""

from __future__ import annotations

import re
from pathlib import Path

BOM = "\ufeff"
MAX_LENGTH = 512
# str.isspace()'s characters: the re module's \s is the same Unicode predicate.
_SPACE = re.compile(r"\s")


class TokenInputError(ValueError):
    """The token (or its file) can't be used; the message says why, in Russian, and never
    shows the token."""


def normalize(raw: str) -> str:
    """The token without a BOM and surrounding whitespace or line endings."""
    return raw.replace(BOM, "").strip()


def shape_problem(token: str) -> str:
    """Why this can't be an API token (in Russian), or "" (its value is never shown)."""
    if not token:
        return ""
    if len(token) > MAX_LENGTH:
        return f"токен длиннее {MAX_LENGTH} знаков: похоже, скопировано лишнее"
    if _SPACE.search(token):
        return "в токене пробел или перевод строки: скопируйте его заново, без лишних знаков"
    if not token.isascii():
        return (
            "в токене есть знаки не из латиницы (например, невидимый знак или русская "
            "буква): токен состоит из латинских букв, цифр и знаков -_.:; скопируйте его "
            "заново"
        )
    if not token.isprintable():
        return "в токене управляющие знаки: скопируйте его заново, без лишних знаков"
    return ""


def clean(raw: str) -> str:
    """normalize(), then the shape checked: TokenInputError with the reason."""
    token = normalize(raw)
    problem = shape_problem(token)
    if problem:
        raise TokenInputError(problem)
    return token


def read_file(source: str, stdin_text: str | None = None) -> str:
    """The cleaned token of a file ('-': `stdin_text`); "" for no source."""
    if not source:
        return ""
    if source == "-":
        raw = stdin_text or ""
    else:
        path = Path(source)
        try:
            raw = path.read_bytes().decode("utf-8-sig")
        except FileNotFoundError:
            raise TokenInputError(f"файла с токеном {path} нет: проверьте путь") from None
        except IsADirectoryError:
            raise TokenInputError(f"{path} — папка, а нужен файл с токеном") from None
        except PermissionError:
            raise TokenInputError(f"файл с токеном {path} не прочитать: нет прав") from None
        except OSError as error:
            raise TokenInputError(f"файл с токеном {path} не прочитать: {error.strerror}") from None
        except UnicodeDecodeError:
            raise TokenInputError(
                f"файл с токеном {path} не в UTF-8: сохраните его как обычный текст"
            ) from None
    token = clean(raw)
    if not token:
        raise TokenInputError(f"файл с токеном {source if source != '-' else '(stdin)'} пуст")
    return token
