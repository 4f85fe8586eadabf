"""The host dimension of a fleet run's report: one report per host (its targets as built and loaded there, rQPS
against the base on the same host), in the order the hosts first appear. Records of a local run carry no host and
are reported as before."""

from __future__ import annotations

import json
from typing import Any

from dbperf.records import CellRecord, ResultsRecord


def hosts_in(records: list[ResultsRecord], meta: dict[str, Any] | None = None) -> list[str]:
    """The hosts that measured something, in the fleet's order (meta.json), else in order of appearance."""
    measured = dict.fromkeys(r.host for r in records if isinstance(r, CellRecord) and r.host)
    ordered = [h for h in (meta or {}).get("fleet", {}).get("hosts", {}) if h in measured]
    return ordered + [h for h in measured if h not in ordered]


def host_view(meta: dict[str, Any], records: list[ResultsRecord], host: str) -> tuple[dict[str, Any],
                                                                                     list[ResultsRecord]]:
    """meta and records as if `host` had run alone: its targets (with what the host recorded about them), its
    metadata as `host`, its status."""
    mine: list[ResultsRecord] = [r for r in records if isinstance(r, CellRecord) and r.host == host]
    hm = meta.get("fleet", {}).get("hosts", {}).get(host, {})
    declared = {t["name"]: t for t in meta["targets"]}
    names = hm.get("targets") or list(dict.fromkeys(r.target for r in mine if isinstance(r, CellRecord)))
    names = [n if isinstance(n, str) else n.get("name") for n in names]
    built = {t["name"]: t for t in hm.get("targets", []) if isinstance(t, dict)}
    targets = [{**declared.get(n, {"name": n}), **built.get(n, {})} for n in names if n in declared or n in built]
    base = meta["base"] if meta["base"] in names else (names[0] if names else meta["base"])
    status = hm.get("status", meta.get("status"))
    view = {**meta, "targets": targets or meta["targets"], "base": base, "host": hm.get("host") or meta.get("host"),
            "status": "complete" if status == "complete" else status}
    return view, mine


def heading(meta: dict[str, Any], host: str) -> str:
    h = meta.get("fleet", {}).get("hosts", {}).get(host, {})
    facts = h.get("host") or {}
    what = ", ".join(str(x) for x in (facts.get("cpu_model"), f"{facts.get('cores')} cores" if facts.get("cores")
                                      else None, facts.get("compiler")) if x)
    status = h.get("status", "?")
    extra = f"; {h['not_run']} cell(s) not run" if h.get("not_run") else ""
    reason = f" ({h['reason']})" if h.get("reason") else ""
    return f"host {host}: {status}{reason}{extra}" + (f" - {what}" if what else "")


def json_by_host(parts: list[tuple[str, str]], skipped: list[dict[str, Any]]) -> str:
    """The JSON report of each host (render.to_json's document) under `hosts`."""
    return json.dumps({"hosts": [{"host": h, **json.loads(doc)} for h, doc in parts], "skipped_lines": skipped},
                      indent=2) + "\n"


def csv_with_host(parts: list[tuple[str, str]]) -> str:
    """The hosts' CSV reports as one table with a leading `host` column."""
    lines: list[str] = []
    for i, (host, doc) in enumerate(parts):
        rows = doc.splitlines()
        if i == 0 and rows:
            lines.append("host," + rows[0])
        lines += [f"{host},{row}" for row in rows[1:]]
    return "\n".join(lines) + "\n"
