"""The sources table (dbperf/studies/sources.py, data/sources.toml): every key a study figure cites resolves, every
source says who, what and when, and the "how this host differs" text is true of each source it names."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from dbperf.errors import UserError
from dbperf.studies.model import study_files
from dbperf.studies.sources import decode_sources, host_differences, load_sources, section_keys, source

pytestmark = pytest.mark.unit

DOCS_SOURCES = Path(__file__).parent.parent / "docs" / "sources.md"


@dataclass(frozen=True)
class FakeHost:
    cpu: str = "AMD EPYC 7B13"
    cores: int = 2
    virtualised: bool = True
    counters: str = "simulated"
    counters_reason: str = "no PMU in this VM"


def _figure_sections() -> list[tuple[str, str]]:
    found = []
    for path in study_files():
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        found += [(path.name, f["section"]) for f in raw.get("figure", [])]
    return found


def test_every_figure_section_names_known_sources() -> None:
    sections = _figure_sections()
    assert sections, "no study figures found"
    table = load_sources()
    unknown = [(name, key) for name, section in sections for key in section_keys(section) if key not in table]
    assert not unknown


def test_every_key_docs_sources_cites_is_in_the_table() -> None:
    keys = set(re.findall(r"`\[([^\]`]+)\]`", DOCS_SOURCES.read_text(encoding="utf-8")))
    assert keys
    assert sorted(keys - set(load_sources())) == []


def test_every_source_has_author_title_and_a_date_or_why_not() -> None:
    for key, s in load_sources().items():
        assert s.author.strip() and s.title.strip(), key
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", s.date) or (not s.date and s.undated.strip()), key
        assert s.hardware or s.hardware_note.strip(), key


def test_a_source_without_a_date_or_reason_is_refused() -> None:
    with pytest.raises(UserError, match="undated"):
        decode_sources('[sources.X]\nauthor = "A"\ntitle = "T"\nhardware_note = "none"\n')
    with pytest.raises(UserError, match="YYYY-MM-DD"):
        decode_sources('[sources.X]\nauthor = "A"\ntitle = "T"\ndate = "2024"\nhardware_note = "none"\n')


def test_published_hardware_is_as_the_articles_say() -> None:
    callaghan = source("Callaghan 2024-10-23").hardware
    assert [h.cpu_vendor for h in callaghan] == ["AMD", "AMD", "AMD", "AMD", "Intel"]
    dell32 = next(h for h in callaghan if h.name == "dell32")
    assert (dell32.cores, dell32.threads) == (32, 24)
    (ronstrom,) = source("Ronström 2008-03-25").hardware
    assert "UltraSPARC T1" in ronstrom.cpu_model and ronstrom.threads == 32
    (bug,) = source("MySQL bug #97777").hardware
    assert bug.cpu_model == "POWER9" and bug.threads == "not published"


def test_amd_vm_host_against_an_amd_source_claims_no_intel() -> None:
    said = host_differences(["Callaghan 2024-10-23"], FakeHost())
    assert "Intel" not in said
    assert "This CPU is" not in said  # four of its five hosts were AMD: no vendor difference to state
    assert "24 threads on 32 cores (dell32)" in said
    assert "2 cores" in said and "virtual machine" in said


def test_amd_host_against_an_intel_source_says_what_it_measured_on() -> None:
    said = host_differences(["Nielsen 2014-01-23", "GCC manual"], FakeHost())
    assert "[Nielsen 2014-01-23]: measured on Intel Sandy Bridge" in said
    assert "hardware performance counters" in said and "no PMU in this VM" in said
    assert "GCC manual" not in said  # a manual measures nothing
    ronstrom = host_differences(["Ronström 2008-03-25"], FakeHost())
    assert "UltraSPARC T1" in ronstrom and "Intel" not in ronstrom


def test_an_intel_bare_metal_host_with_counters_differs_from_callaghan_in_nothing_published() -> None:
    host = FakeHost(cpu="Intel Xeon Gold", cores=64, virtualised=False, counters="hardware", counters_reason="")
    assert host_differences(["Callaghan 2024-10-23"], host).startswith("No published hardware fact")


def test_the_untraced_figure_is_marked() -> None:
    untraced = [k for k, s in load_sources().items() if not s.traced]
    assert untraced == ["not yet traced: PostgreSQL PGO+LTO+BOLT on TPROC-C"]
    tproc = [section for _, section in _figure_sections() if "TPROC-C" in section]
    assert tproc and all(untraced[0] in section_keys(s) for s in tproc)
    assert "not yet traced" in host_differences(untraced, FakeHost())


def test_an_unknown_key_is_one_line() -> None:
    with pytest.raises(UserError) as e:
        source("Nobody 1999-01-01")
    assert "Nobody 1999-01-01" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(UserError):
        host_differences(["Nobody 1999-01-01"], FakeHost())


def test_the_notes_on_cycles_are_said_only_where_a_figure_times_the_cpu() -> None:
    timed = host_differences(["Nielsen 2014-01-23"], FakeHost())
    assert "PAUSE latency" in timed and "TSC ticks" in timed
    untimed = host_differences(["Nielsen 2014-01-23"], FakeHost(), cpu_timed=False)
    assert "PAUSE" not in untimed and "TSC" not in untimed
    assert "This CPU is" in untimed and "virtual machine" in untimed  # the facts themselves stay
