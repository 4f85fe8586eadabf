"""Words that mean the lab's own workings, which no user can look up: its private source notes ("seed" articles,
the BRIEF) and its tracker's issue numbers. The product cites a source by its key (docs/sources.md) and says what
a thing is instead. `dbperf study check` refuses them in a record, tests/test_vocabulary.py anywhere in the product.

"seed" also means a random-number seed (the `seed` key of an experiment, order_seed, --rand-seed): those stay, so
only the phrases that mean the notes are banned. A public project's issue keeps its '#' ("hyperfine issue #594")."""

from __future__ import annotations

import re

BANNED: dict[str, str] = {
    r"\bseeds?/": "the folder of the lab's private source articles",
    r"\bseed(?:'s|s')": "the private notes' article (cite the source's key: docs/sources.md)",
    r"\bseeds? 0\d*\b": "a private notes' article by its number",
    r"\bBRIEF\b": "the lab's private notes",
    r"(?i)\bthe brief\b": "the lab's private notes",
    r"(?i)\bissues? \d+": "an issue of the lab's own tracker (say what the thing is)",
    r"(?i)\bthe issue's\b": "an issue of the lab's own tracker (say what the thing is)",
}
PATTERNS = [(re.compile(p), why) for p, why in BANNED.items()]


def internal_words(text: str) -> list[tuple[int, str, str]]:
    """(line number, the words found, why they are banned) for each internal phrase in `text`."""
    return [(n, m.group(0), why) for n, line in enumerate(text.splitlines(), 1)
            for pattern, why in PATTERNS for m in pattern.finditer(line)]
