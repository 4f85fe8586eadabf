"""The lab's public sources as data: dbperf/studies/data/sources.toml, decoded and checked once (msgspec, as
study_record.py and run_meta.py read theirs), keyed by the citation key the code, the CLI, the study files and
docs/sources.md cite a source by (a study figure's `section`: one key, or several joined by "; ").

Each source says who, what, where and when, whether its figure is traced to a publication, and what its published
figures were measured on (`hardware`: one entry per host, every field as the source says it or "not published").
`host_differences` turns that into the "how this host differs" text of a study's summary: per fact (CPU vendor,
cores against the benchmark's threads, virtual machine, performance counters), the sources whose hardware differs
from this host's, grouped where their hardware reads the same."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Final, Literal, Protocol

import msgspec

from dbperf.errors import UserError

SOURCES_FILE = Path(__file__).parent / "data" / "sources.toml"
NOT_PUBLISHED: Final = "not published"
KEY_SEPARATOR = "; "  # a figure's section citing several sources: "Callaghan 2024-10-23; Pinpoint"
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

Unpublished = Literal["not published"]


class PublishedHost(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """A host the source's published figures were measured on, as the source describes it."""
    name: str = ""
    machine: str = NOT_PUBLISHED
    cpu_vendor: str = NOT_PUBLISHED
    cpu_model: str = NOT_PUBLISHED
    cores: int | Unpublished = NOT_PUBLISHED  # the host's cores
    threads: int | Unpublished = NOT_PUBLISHED  # the benchmark's threads
    os: str = NOT_PUBLISHED
    virtualised: Literal["yes", "no", "not published"] = NOT_PUBLISHED
    counters: Literal["hardware", "none", "not published"] = NOT_PUBLISHED  # hardware: read from the PMU
    note: str = ""

    @property
    def cpu(self) -> str:
        """The CPU in a phrase: its vendor and model as far as published ("IBM POWER9", "Intel (model not
        published)", "an unnamed CPU")."""
        vendor = "" if self.cpu_vendor == NOT_PUBLISHED else self.cpu_vendor
        if self.cpu_model == NOT_PUBLISHED:
            return f"{vendor} (model not published)" if vendor else "an unnamed CPU"
        return self.cpu_model if vendor.lower() in self.cpu_model.lower() else f"{vendor} {self.cpu_model}"


class Source(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    author: str
    title: str
    where: str = ""
    date: str = ""  # YYYY-MM-DD; empty where undated, and then `undated` says why
    undated: str = ""
    url: str = ""
    traced: bool = True  # False: a figure that reached the lab without its publication
    measured: bool = True  # False: the source publishes no measured figure the lab quotes
    note: str = ""
    hardware: list[PublishedHost] = []
    hardware_note: str = ""

    @property
    def citation(self) -> str:
        """`Author, "Title" (YYYY-MM-DD)`, as a study's `sources` list gives a source."""
        when = self.date or self.undated
        return f'{self.author}, "{self.title}" ({when})'


class SourcesFile(msgspec.Struct, forbid_unknown_fields=True):
    sources: dict[str, Source]


class HostFacts(Protocol):
    """The host a study ran on, as far as its differences go (studies/summary.py Host has these and more)."""
    @property
    def cpu(self) -> str: ...
    @property
    def cores(self) -> int: ...
    @property
    def virtualised(self) -> bool: ...
    @property
    def counters(self) -> str: ...  # "hardware" or "simulated"
    @property
    def counters_reason(self) -> str: ...


def decode_sources(text: str, where: str = "sources.toml") -> dict[str, Source]:
    """The sources of a sources.toml's text, checked; a UserError says what is wrong and where."""
    try:
        raw = tomllib.loads(text)
        table = msgspec.convert(raw, SourcesFile).sources
    except (tomllib.TOMLDecodeError, msgspec.ValidationError) as e:
        raise UserError(f"{where}: {e}") from None
    for key, s in table.items():
        problem = _problem(s)
        if problem:
            raise UserError(f"{where}: [{key}] {problem}")
    return table


def _problem(s: Source) -> str | None:
    if not s.author.strip() or not s.title.strip():
        return "needs an author and a title"
    if s.date and not DATE.fullmatch(s.date):
        return f"date {s.date!r} is not YYYY-MM-DD"
    if not s.date and not s.undated.strip():
        return "has no date: say why in `undated`"
    if not s.hardware and not s.hardware_note.strip():
        return "has no hardware: say why in `hardware_note`"
    return None


@cache
def load_sources() -> dict[str, Source]:
    """dbperf/studies/data/sources.toml, read once."""
    return decode_sources(SOURCES_FILE.read_text(encoding="utf-8"), str(SOURCES_FILE))


def source(key: str) -> Source:
    """The source cited as `key`; a UserError in one line for a key the table does not hold."""
    found = load_sources().get(key)
    if found is None:
        raise UserError(f"no source {key!r} in {SOURCES_FILE.name} (docs/sources.md lists the sources and their keys)")
    return found


def section_keys(section: str) -> list[str]:
    """The source keys a figure's `section` cites ("A; B": two)."""
    return [k.strip() for k in section.split(KEY_SEPARATOR.strip()) if k.strip()]


# --- How this host differs from the published hosts ---

def host_differences(keys: list[str], host: HostFacts, cpu_timed: bool = True) -> str:
    """What the given sources' published hosts had that this one has not (CPU vendor, cores against the threads
    their benchmarks used, bare metal against a virtual machine, performance counters), said per source, sources
    whose hardware reads the same grouped; each sentence true of every source it names. What only figures that time
    the CPU need (PAUSE and a PRNG's cost by vendor, TSC ticks for cycles) is said only when `cpu_timed`. Sources
    that publish no measurement are left out; an unknown key is a UserError."""
    sources = {k: source(k) for k in dict.fromkeys(keys)}
    measured = {k: s for k, s in sources.items() if s.measured}
    said = [*_vendor(measured, host, cpu_timed), *_cores(measured, host), *_virtual(measured, host, cpu_timed),
            *_counters(measured, host), *_unrecorded(measured)]
    if said:
        return " ".join(said)
    if not measured:
        return f"{_keys(list(sources))} {'publishes' if len(sources) == 1 else 'publish'} no measurement to compare " \
               "this host with."
    return f"No published hardware fact of {_keys(list(measured))} differs from this host's."


def vendor_of(cpu: str) -> str:
    """The vendor in a CPU's model string ("AMD EPYC 7B13" → "AMD"), else the string itself."""
    low = cpu.lower()
    for vendor, words in (("AMD", ("amd",)), ("Intel", ("intel",)), ("IBM", ("ibm", "power")),
                          ("Sun", ("sun ", "sparc")), ("Arm", ("arm", "neoverse", "cortex"))):
        if any(w in low for w in words):
            return vendor
    return cpu


def _grouped(described: Iterable[tuple[str, str]]) -> list[str]:
    """"[A], [B]: what." for each description, the keys that share it together, in the order first seen."""
    groups: dict[str, list[str]] = {}
    for key, text in described:
        groups.setdefault(text, []).append(key)
    return [f"{_keys(ks)}: {text}." for text, ks in groups.items()]


def _hosts_said(hosts: list[PublishedHost], say: Callable[[PublishedHost], str]) -> str:
    """What `say` says of each host, hosts that read the same together and named in brackets ("1 thread on 8 cores
    (beelink, pn53); 24 threads on 32 cores (dell32)"); no names for a single host or unnamed ones."""
    groups: dict[str, list[str]] = {}
    for h in hosts:
        groups.setdefault(say(h), []).append(h.name)
    if len(hosts) == 1 or not any(h.name for h in hosts):
        return "; ".join(groups)
    return "; ".join(f"{text} ({', '.join(n for n in names if n) or 'unnamed'})" for text, names in groups.items())


def _keys(keys: list[str]) -> str:
    return ", ".join(f"[{k}]" for k in keys)


def _vendor(sources: dict[str, Source], host: HostFacts, cpu_timed: bool) -> list[str]:
    mine = vendor_of(host.cpu).lower()
    differ = [(k, s) for k, s in sources.items()
              if s.hardware and mine not in {h.cpu_vendor.lower() for h in s.hardware}]
    if not differ:
        return []
    said = _grouped((k, "measured on " + _hosts_said(s.hardware, lambda h: h.cpu) if any(
        h.cpu_vendor != NOT_PUBLISHED for h in s.hardware) else "its CPU is not published") for k, s in differ)
    return [f"This CPU is {host.cpu}.", *said,
            *(["PAUSE latency, the cost of a locked instruction and a PRNG's cost differ by vendor and generation: "
               "compare the shape of a table (ratios, order), not its cycles."] if cpu_timed else [])]


def _threads_on_cores(h: PublishedHost) -> str:
    cores = f"{h.cores} cores" if isinstance(h.cores, int) else "cores not published"
    if isinstance(h.threads, int):
        return f"{h.threads} thread{'' if h.threads == 1 else 's'} " + (f"on {cores}" if isinstance(h.cores, int)
                                                                          else f"({cores})")
    return f"{cores}, threads not published"


def _cores(sources: dict[str, Source], host: HostFacts) -> list[str]:
    def over(h: PublishedHost) -> bool:
        return any(isinstance(n, int) and n > host.cores for n in (h.threads, h.cores))

    differ = [(k, s) for k, s in sources.items() if any(over(h) for h in s.hardware)]
    if not differ:
        return []
    said = _grouped((k, _hosts_said(s.hardware, _threads_on_cores)) for k, s in differ)
    return [*said, f"This host has {host.cores} cores: figures of more threads than that do not transfer, and the "
                   "lab pins client and server to a CPU each, so one-thread cells are what is comparable."]


def _bare_metal(hosts: list[PublishedHost]) -> str:
    bare = [h for h in hosts if h.virtualised == "no"]
    if len(bare) == len(hosts):
        return "measured on bare metal"
    return f"measured partly on bare metal ({', '.join(h.name or 'unnamed' for h in bare)})"


def _virtual(sources: dict[str, Source], host: HostFacts, cpu_timed: bool) -> list[str]:
    hosted = {k: s.hardware for k, s in sources.items() if s.hardware}
    if not hosted:
        return []
    if not host.virtualised:
        vms = [k for k, hosts in hosted.items() if any(h.virtualised == "yes" for h in hosts)]
        return [f"{_keys(vms)} measured on virtual machines; this host is not one."] if vms else []
    ticks = "figures in TSC ticks stand in for core cycles, " if cpu_timed else ""
    said = [f"This host is a virtual machine: {ticks}steal time and the neighbours' load add noise (the lab flags "
            "interfered cells), and vCPUs may share a physical core."]
    said += _grouped((k, _bare_metal(hosts)) for k, hosts in hosted.items()
                     if any(h.virtualised == "no" for h in hosts))
    unsaid = [k for k, hosts in hosted.items() if all(h.virtualised == NOT_PUBLISHED for h in hosts)]
    if unsaid:
        said.append(f"{_keys(unsaid)} {'does' if len(unsaid) == 1 else 'do'} not say whether "
                    f"{'its' if len(unsaid) == 1 else 'their'} hosts were virtual machines.")
    return said


def _counters(sources: dict[str, Source], host: HostFacts) -> list[str]:
    if host.counters == "hardware":
        return []
    pmu = {k: [h for h in s.hardware if h.counters == "hardware"] for k, s in sources.items()}
    said = _grouped((k, "its figures were read from the hardware performance counters of "
                     + _hosts_said(hosts, lambda h: h.cpu)) for k, hosts in pmu.items() if hosts)
    if not said:
        return []
    return [*said, f"No hardware counters here ({host.counters_reason}): those figures come from the simulated "
                   "tier (cachegrind) instead, which counts user-space work only and models caches rather than "
                   "measuring them."]


def _unrecorded(sources: dict[str, Source]) -> list[str]:
    said = []
    untraced = [k for k, s in sources.items() if not s.traced]
    if untraced:
        said.append(f"{_keys(untraced)}: not yet traced to a publication, so nothing is known of "
                    f"{'its' if len(untraced) == 1 else 'their'} hardware.")
    keys = [k for k, s in sources.items() if s.traced and not s.hardware]
    if keys:
        said.append(f"{_keys(keys)}: {'its' if len(keys) == 1 else 'their'} hardware is not recorded here.")
    return said
