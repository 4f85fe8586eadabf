"""A study's notebook (docs/studies/notebooks/NAME.md): dated analyses written by hand beside the generated record.
A section names the builds it rests on in a comment, `<!-- builds: KEY, KEY -->` (the manifest keys), or says by
hand what invalidated it, `<!-- superseded: WHY -->` (a build whose key was not kept); a section resting on a build
found unfit (builds.py) carries a "Superseded" banner, put there by `dbperf study record NAME --again` and required
by `dbperf study check`, so that no stale finding stands beside its correction unmarked."""

from __future__ import annotations

import re
from dataclasses import dataclass

BUILDS = re.compile(r"<!--\s*builds:\s*([^>]*?)\s*-->")
BY_HAND = re.compile(r"<!--\s*superseded:\s*([^>]*?)\s*-->")
BANNER = '!!! warning "Superseded"'


@dataclass(frozen=True)
class Section:
    heading: str
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def why_superseded(self, problems: dict[str, list[str]]) -> str | None:
        """Why the section is superseded: what is wrong with a build it names, or what it says by hand."""
        said = [p for m in BUILDS.finditer(self.text) for key in re.split(r"[,\s]+", m.group(1)) if key
                for p in problems.get(key, [])]
        said += [m.group(1) for m in BY_HAND.finditer(self.text)]
        return "; ".join(dict.fromkeys(said)) or None

    @property
    def marked(self) -> bool:
        return any(line.startswith(BANNER) for line in self.lines)


def sections(text: str) -> tuple[list[str], list[Section]]:
    """The lines before the first `## ` heading, and each section from its heading to the next."""
    head: list[str] = []
    found: list[Section] = []
    for line in text.splitlines():
        if line.startswith("## "):
            found.append(Section(line, [line]))
        elif found:
            found[-1].lines.append(line)
        else:
            head.append(line)
    return head, found


def with_banners(text: str, problems: dict[str, list[str]]) -> str:
    """`text` with a Superseded banner under the heading of every section that needs one and has none."""
    head, found = sections(text)
    out = list(head)
    for s in found:
        why = s.why_superseded(problems)
        out.append(s.heading)
        if why and not s.marked:
            # the record may hold a re-measurement or nothing yet: it never holds this section's figures
            out += ["", BANNER, f"    {why}: what this section found is not a finding, and the record holds none of "
                                "its figures."]
        out += s.lines[1:]
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def unmarked(text: str, problems: dict[str, list[str]]) -> list[str]:
    """The headings of the sections that rest on an unfit build and carry no banner."""
    return [s.heading for s in sections(text)[1] if s.why_superseded(problems) and not s.marked]
