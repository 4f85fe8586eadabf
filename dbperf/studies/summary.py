"""A study's short Markdown summary: the study's public sources (docs/sources.md), the table **published
figure | measured here | verdict | host** (from the published runs), and a paragraph on how this host differs
from the published runs' (vendor, virtual machine without a PMU, core count, load), from the host facts the lab
records with every result. What users or engines named is escaped (report/escape.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

from dbperf.explain.mode import detect_mode
from dbperf.host.cpu_identity import CpuIdentity
from dbperf.host.facts import host_metadata
from dbperf.report.escape import md
from dbperf.report.html_page import Page, text
from dbperf.report.html_page import table as html_table
from dbperf.studies.figures import Headline, Row
from dbperf.studies.model import Mode, Study
from dbperf.studies.sources import host_differences as sources_differences
from dbperf.studies.sources import load_sources, section_keys

# The first line of a smoke run's summary: its figures come from tiny tables and stand-in binaries.
SMOKE_NOTE = ("SMOKE RUN: a check that the study's steps run and its figures are read back, on tiny tables with "
              "released or cached binaries. Its figures are not results: do not compare them with the published ones "
              "or put them on record.")
MODE_NOTES = {"full": "", "quick": " (quick mode: a check that the study runs, not the published method)",
              "smoke": " (smoke mode: plumbing only, see the first line)"}


@dataclass(frozen=True)
class Host:
    cpu: str
    cores: int
    virtualised: bool
    counters: str  # hardware or simulated
    counters_reason: str
    kernel: str
    load_start: tuple[float, float, float]
    load_end: tuple[float, float, float] | None = None
    cpu_id: str | None = None  # family, model, stepping: None in runs recorded before the lab kept it
    microcode: str | None = None

    @property
    def short(self) -> str:
        return f"{self.cpu}, {self.cores} cores{', VM' if self.virtualised else ''}"

    @property
    def identity(self) -> CpuIdentity:
        return CpuIdentity(self.cpu, self.cpu_id, self.cores)

    @property
    def described(self) -> str:
        """`short` with the CPU's generation and microcode, for the run's line."""
        ident = "; ".join(x for x in (self.cpu_id, f"microcode {self.microcode}" if self.microcode else None) if x)
        return f"{self.short} ({ident})" if ident else self.short

    def ended(self) -> Host:
        return replace(self, load_end=os.getloadavg())

    def to_json(self) -> dict[str, Any]:
        return {"cpu": self.cpu, "cpu_id": self.cpu_id, "microcode": self.microcode, "cores": self.cores,
                "virtualised": self.virtualised, "counters": self.counters, "counters_reason": self.counters_reason,
                "kernel": self.kernel, "load_start": self.load_start, "load_end": self.load_end}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Host:
        """The host as a study run's study.json holds it (to_json)."""
        def load(v: Any) -> tuple[float, float, float] | None:
            return (float(v[0]), float(v[1]), float(v[2])) if isinstance(v, list) and len(v) == 3 else None
        return cls(str(doc.get("cpu", "?")), int(doc.get("cores") or 1), bool(doc.get("virtualised")),
                   str(doc.get("counters", "?")), str(doc.get("counters_reason", "")), str(doc.get("kernel", "?")),
                   load(doc.get("load_start")) or (0.0, 0.0, 0.0), load(doc.get("load_end")),
                   _text(doc.get("cpu_id")), _text(doc.get("microcode")))


@dataclass(frozen=True)
class RunFacts:
    """What a study's summary says of the run beside its figures."""
    host: Host
    when: str  # when it started, for readers ("2026-11-25 02:00 UTC")
    command: str  # the command that ran it
    mode: Mode
    headline: Headline | None
    steps: list[tuple[str, str]]  # (step name, how it ended)
    also: dict[str, Headline] = field(default_factory=dict)  # step -> its line under the headline ([headline] also)
    rewritten: str | None = None  # when `dbperf study summary` wrote the summary again from the same results
    kept: str | None = None  # which figures were kept from the run on record, and whose (studies/record.py)


def this_host() -> Host:
    facts = host_metadata()
    mode = detect_mode()
    return Host(str(facts["cpu_model"]), int(facts["cores"] or 1), bool(facts["virtualised"]), mode.mode, mode.reason,
                str(facts["kernel"]), os.getloadavg(), cpu_id=facts["cpu_id"], microcode=facts["microcode"])


def _text(value: object) -> str | None:
    return str(value) if value else None


def host_differences(host: Host, sections: list[str] | tuple[str, ...] = (), cpu_timed: bool = True) -> str:
    """What this host changes against the published runs of the sources the figures cite (their `section`s, keys
    of the sources table: sources.py), each said of the source it is true of, then this host's load average.
    `cpu_timed`: a figure times instructions on this CPU (a probe's), so the notes on cycles apply."""
    keys = [k for section in sections for k in section_keys(section) if k in load_sources()]
    counters = "" if host.counters == "hardware" else f" (no hardware counters: {host.counters_reason})"
    said = ([sources_differences(list(dict.fromkeys(keys)), host, cpu_timed)] if keys else
            [f"This host: {host.short}{counters}."])
    end = f", at the end {_load(host.load_end)}" if host.load_end else ""
    said.append(f"Load average at the start {_load(host.load_start)}{end} (1, 5, 15 min).")
    return " ".join(said)


def _load(load: tuple[float, float, float] | None) -> str:
    return "–" if load is None else " / ".join(f"{x:.2f}" for x in load)


def table(rows: list[Row], host: Host) -> list[str]:
    out = ["| published figure | measured here | verdict | host |", "|---|---|---|---|"]
    for r in rows:
        out.append(f"| {md(r.what)} ({md(r.section)}): {md(r.published)} | {md(measured_text(r))} | "
                   f"{md(verdict_text(r))} | {md(host_text(r, host))} |")
    return out


def measured_text(r: Row) -> str:
    """The figure with its interval: of the value, or of the change (after / before) where it is one; an exact count
    has none to show."""
    if r.low is None or r.high is None or r.low == r.high:
        return r.measured
    if r.checked is not None and r.value is not None and r.checked != r.value:
        return f"{r.measured} (after / before {r.low:.4g}–{r.high:.4g})"
    return f"{r.measured} [{r.low:.4g}, {r.high:.4g}]"


def verdict_text(r: Row) -> str:
    return (f"superseded ({r.superseded}); " if r.superseded else "") + r.verdict


def host_text(r: Row, host: Host) -> str:
    """Which run measured the figure: its own provenance, else (older records) the host said when it was kept."""
    if r.run is not None:
        return r.run.label
    return r.host or (host.short if r.measured_anything else "–")


def rewritten_note(run: RunFacts) -> str:
    """Said after the run's line when the summary was written again, or holds figures of another run (plain text:
    the caller escapes it)."""
    return ((f" Summary written again {run.rewritten} from the same results, with the study's figures as defined "
             "then (dbperf study summary)." if run.rewritten else "") + (f" {run.kept}" if run.kept else ""))


def sourced(study: Study) -> str:
    """The study's description after the public sources it reproduces (plain text: the caller escapes it)."""
    return (f"Sources: {'; '.join(study.sources)}. " if study.sources else "") + study.description


def summary(study: Study, rows: list[Row], run: RunFacts, recorded: list[str] | None = None) -> str:
    """The summary page of one study run; `recorded` the comparison with the run on record, as lines. A smoke run
    says so first, above the headline."""
    host, mode, headline = run.host, run.mode, run.headline
    lines = [SMOKE_NOTE, ""] if mode == "smoke" else []
    lines += [headline.first_line(study.name)] if headline else []
    lines += [h.first_line(f"{study.name} {step}") for step, h in run.also.items()]
    lines += ["", headline.decided_by()] if headline else []
    lines += [f"{md(step)}: {h.decided_by()}" for step, h in run.also.items() if h.compared]
    lines += [
        "", f"# Study {md(study.name)}: {md(study.title)}", "",
        md(sourced(study)), "",
        f"Run {md(run.when)} on {md(host.described)}, kernel {md(host.kernel)}: `{run.command}`"
        + MODE_NOTES[mode] + "." + md(rewritten_note(run)), "",
        *table(rows, host), "",
        "## Steps", "",
        *[f"- {md(name)}: {md(how)}" for name, how in run.steps], "",
        "## How this host differs", "", host_differences(host, [r.section for r in rows], study.times_the_cpu), "",
    ]
    if recorded:
        lines += ["## Against the run on record", "", *recorded, ""]
    if headline:
        lines.append(headline.last_line())
    return "\n".join(lines).lstrip("\n") + "\n"


def html_summary(study: Study, rows: list[Row], run: RunFacts, reports: list[str]) -> str:
    """The summary as one self-contained HTML page (report/html_page.py; every value escaped), linking the
    experiment steps' own HTML reports (`reports`: file names beside it)."""
    host, mode, headline = run.host, run.mode, run.headline
    page = Page(f"Study {study.name}: {study.title}")
    if mode == "smoke":
        page.add(f"<p><b>{text(SMOKE_NOTE)}</b></p>")
    if headline:
        page.add(f"<p><b>{text(headline.first_line(study.name))}</b></p>")
        page.add(f"<p>{text(headline.decided_by())}</p>")
    for step, h in run.also.items():
        page.add(f"<p><b>{text(h.first_line(f'{study.name} {step}'))}</b></p>")
        if h.compared:
            page.add(f"<p>{text(h.decided_by())}</p>")
    page.add(f"<p>{text(sourced(study))}</p>")
    page.add(f"<p>Run {text(run.when)} on {text(host.described)}, kernel {text(host.kernel)}: "
             f"<code>{text(run.command)}</code>" + text(MODE_NOTES[mode] + "." + rewritten_note(run)) + "</p>")
    page.section("figures", "The published figures and this host's")
    page.add(html_table(("published figure", "measured here", "verdict", "host"),
                        [(f"{r.what} ({r.section}): {r.published}", measured_text(r), verdict_text(r),
                          host_text(r, host)) for r in rows],
                        text_columns=4))
    page.section("steps", "Steps")
    page.add(html_table(("step", "how it ended"), run.steps, text_columns=2))
    if reports:
        page.add("<p>Reports of the experiment steps: "
                 + ", ".join(f'<a href="{text(r)}">{text(r)}</a>' for r in reports) + "</p>")
    page.section("host", "How this host differs")
    page.add(f"<p>{text(host_differences(host, [r.section for r in rows], study.times_the_cpu))}</p>")
    if headline:
        page.add(f"<p><b>{text(headline.last_line())}</b></p>")
    return page.render()
