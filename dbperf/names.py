"""What a name the user gives (a target, a workload, a variant) may hold: it is shown in terminal tables, Markdown,
HTML and file paths, so letters, digits and `_ . + -` only, at most 64 characters."""

from __future__ import annotations

import re

from dbperf.errors import UserError

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")
RULE = "letters, digits, '_', '.', '+' or '-' (at most 64, starting with a letter or digit)"


def check_name(value: object, where: str) -> str:
    if not isinstance(value, str) or not NAME.match(value):
        raise UserError(f"{where}: 'name' must be {RULE} (got {value!r})")
    return value
