"""The host dimension of a fleet run's report: one report per host (its targets as built and loaded there, rQPS
against the base on the same host), in the order the hosts first appear. Records of a local run carry no host and
are reported as before."""

from __future__ import annotations

from typing import Any

from dbperf.host.cpu_identity import CpuIdentity
from dbperf.records import CellRecord, ResultsRecord, to_builtins
from dbperf.run_meta import FleetHostMeta, HostMeta, RunMeta, TargetMeta, meta_part


def hosts_in(records: list[ResultsRecord], meta: RunMeta | None = None) -> list[str]:
    """The hosts that measured something, in the fleet's order (meta.json), else in order of appearance."""
    measured = dict.fromkeys(r.host for r in records if isinstance(r, CellRecord) and r.host)
    fleet = meta.fleet if meta else None
    ordered = [h for h in (fleet.hosts if fleet else {}) if h in measured]
    return ordered + [h for h in measured if h not in ordered]


def _host_meta(meta: RunMeta, host: str) -> FleetHostMeta:
    return (meta.fleet.hosts.get(host) if meta.fleet else None) or FleetHostMeta()


def host_view(meta: RunMeta, records: list[ResultsRecord], host: str) -> tuple[RunMeta, list[ResultsRecord]]:
    """meta and records as if `host` had run alone: its targets (with what the host recorded about them), its
    metadata as `host`, its cpus, its status."""
    mine: list[ResultsRecord] = [r for r in records if isinstance(r, CellRecord) and r.host == host]
    hm = _host_meta(meta, host)
    names = [n if isinstance(n, str) else n.name for n in hm.targets] or list(
        dict.fromkeys(r.target for r in mine if isinstance(r, CellRecord)))
    base = meta.base if meta.base in names else (names[0] if names else meta.base)
    status = hm.status or meta.status
    view = meta.replace(targets=_host_targets(meta, hm, names) or meta.targets, base=base, host=hm.host or meta.host,
                        cpus=hm.cpus or meta.cpus,  # meta.cpus is the controller's plan, not the host's
                        status="complete" if status == "complete" else status)
    return view, mine


def _host_targets(meta: RunMeta, hm: FleetHostMeta, names: list[str]) -> list[TargetMeta]:
    """The host's targets as declared, with what the host recorded of them as built and loaded there."""
    declared = {t.name: t for t in meta.targets}
    built = {t.name: t for t in hm.targets if isinstance(t, TargetMeta)}
    return [meta_part(TargetMeta, {**_fields(declared.get(n)), **_fields(built.get(n)), "name": n})
            for n in names if n in declared or n in built]


def _fields(target: TargetMeta | None) -> dict[str, Any]:
    return to_builtins(target) if target else {}


def heading(meta: RunMeta, host: str) -> str:
    h = _host_meta(meta, host)
    facts = h.host or HostMeta()
    cpu = CpuIdentity(facts.cpu_model, facts.cpu_id, facts.cores).named if facts.cpu_model else None
    what = ", ".join(str(x) for x in (cpu, f"{facts.cores} cores" if facts.cores else None,
                                      facts.compiler) if x)
    status = h.status or "?"
    extra = f"; {h.not_run} cell(s) not run" if h.not_run else ""
    reason = f" ({h.reason})" if h.reason else ""
    return f"host {host}: {status}{reason}{extra}" + (f" - {what}" if what else "")
