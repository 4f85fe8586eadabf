"""Workload files: parsing, variable substitution, and compiling placeholders into the driver's binds.

A workload file describes one event: its statements, with `{name}` placeholders bound to parameter generators,
whether the event is a transaction, and how it is reported. `{table}` is the table number, drawn per statement
execution. A file may declare `variants`, each a catalog entry of its own with its own `vars`, which replace
`${var}` anywhere in the file (a string that is exactly `${var}` takes the variable's value and type).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dbperf import engines
from dbperf.errors import UserError
from dbperf.experiment import keys
from dbperf.names import check_name

GROUPS = ("point", "range", "write")
PHASES = ("read", "write", "final")
GENERATORS = ("uniform", "zipf", "hot", "range", "digits")
PLACEHOLDER = re.compile(r"\{(\w+)\}")
VARIABLE = re.compile(r"\$\{(\w+)\}")
FILE_KEYS = keys.names(keys.WORKLOAD)
STATEMENT_KEYS = keys.names(keys.STATEMENT)
GEN_KEYS = {"uniform": {"count"}, "zipf": {"count", "exponent"}, "hot": {"count", "start"}, "range": {"size"},
            "digits": {"groups"}}


@dataclass(frozen=True)
class Statement:
    sql: str
    repeat: int
    params: dict[str, dict[str, Any]]
    # Engine-specific SQL where the dialects differ: {"postgres": "...", "mariadb": "..."}.
    dialect: dict[str, str] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash((self.sql, self.repeat, repr(self.params), repr(self.dialect)))

    def sql_for(self, engine: str) -> str:
        return self.dialect.get(engine, self.sql)


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    group: str
    phase: str
    order: int
    transaction: bool
    statements: tuple[Statement, ...]
    rows_per_event: str | None = None
    source: str = ""
    writes: bool = field(default=False)
    # A weighted mix (`[[event]]` tables, pgbench -f file@weight): each event draws one kind by weight. The
    # workload's own statements are then all kinds' statements, for display.
    mix: tuple[tuple[float, Workload], ...] = ()

    @property
    def queries_per_event(self) -> int:
        """sysbench counts BEGIN and COMMIT as queries. A mix: the weighted mean, rounded (the driver counts each
        event's queries as they run; this figure is for `dbperf list` and the profilers' event counts)."""
        if self.mix:
            total = sum(w for w, _ in self.mix)
            return max(1, round(sum(w * k.queries_per_event for w, k in self.mix) / total))
        return sum(s.repeat for s in self.statements) + (2 if self.transaction else 0)

    def display_sql(self) -> list[str]:
        """The statements with placeholders shown as `?` (lists as `?×N`), for `dbperf list`."""
        lines = []
        for s in self.statements:
            def shown(m: re.Match[str], s: Statement = s) -> str:
                name = m.group(1)
                spec = s.params.get(name)
                if name == "table":
                    return "{table}"
                if spec and spec["gen"] == "range":
                    return "? AND ?"
                count = spec.get("count", 1) if spec else 1
                return "?" if count == 1 else f"?×{count}"
            text = PLACEHOLDER.sub(shown, s.sql)
            lines.append(text if s.repeat == 1 else f"{text}   (×{s.repeat})")
        if self.transaction:
            lines = ["BEGIN", *lines, "COMMIT"]
        if self.mix:
            total = sum(w for w, _ in self.mix)
            lines = [f"{k.name.rsplit('.', 1)[-1]} ({w / total:.0%}): {line}" for w, k in self.mix
                     for line in k.display_sql()]
        return lines


def _substitute(value: Any, variables: dict[str, Any], where: str) -> Any:
    if isinstance(value, str):
        whole = VARIABLE.fullmatch(value)
        if whole:
            name = whole.group(1)
            if name not in variables:
                raise UserError(f"{where}: unknown variable ${{{name}}}")
            return _substitute(variables[name], variables, where)

        def one(m: re.Match[str]) -> str:
            if m.group(1) not in variables:
                raise UserError(f"{where}: unknown variable ${{{m.group(1)}}}")
            return str(variables[m.group(1)])
        return VARIABLE.sub(one, value)
    if isinstance(value, dict):
        return {k: _substitute(v, variables, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, variables, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def _positive_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"{where}: expected a positive integer, got {value!r}")
    return value


def _check_param(spec: Any, where: str) -> dict[str, Any]:
    if not isinstance(spec, dict) or "gen" not in spec:
        raise UserError(f"{where}: expected a table with a 'gen' key, one of {', '.join(GENERATORS)}")
    gen = spec["gen"]
    if gen not in GENERATORS:
        raise UserError(f"{where}: unknown generator {gen!r} (known: {', '.join(GENERATORS)})")
    unknown = set(spec) - {"gen"} - GEN_KEYS[gen]
    if unknown:
        raise UserError(f"{where}: unknown key {sorted(unknown)[0]!r} for generator {gen!r}")
    for key in ("count", "size", "groups"):
        if key in spec:
            _positive_int(spec[key], f"{where}.{key}")
    if gen == "zipf":
        exponent = spec.get("exponent", 0.8)
        if isinstance(exponent, bool) or not isinstance(exponent, (int, float)) or exponent <= 0:
            raise UserError(f"{where}.exponent: expected a positive number, got {exponent!r}")
    if gen == "hot":
        start = spec.get("start", "middle")
        if start != "middle" and (isinstance(start, bool) or not isinstance(start, int) or start < 1):
            raise UserError(f"{where}.start: expected \"middle\" or a positive id, got {start!r}")
    return spec


def _mix_event(doc: dict[str, Any], raw: dict[str, Any], i: int, name: str, source: str) -> tuple[float, Workload]:
    """One `[[event]]` of a mix, with its weight: the file's other keys plus the event's own."""
    ewhere = f"{source} ({name}) event {i}"
    unknown = set(raw) - {"name", "weight", "transaction", "statement"}
    if unknown:
        raise UserError(f"{ewhere}: unknown key {sorted(unknown)[0]!r} (known: name, weight, transaction, "
                        "statement)")
    ename = check_name(raw.get("name", f"event{i}"), ewhere)
    weight = raw.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight > 0:
        raise UserError(f"{ewhere} ({ename}).weight: must be a positive number, got {weight!r}")
    sub = {k: v for k, v in doc.items() if k not in ("event", "name")}
    sub.update({k: raw[k] for k in ("transaction", "statement") if k in raw})
    return float(weight), _build(sub, f"{name}.{ename}", source)


def _build_mix(doc: dict[str, Any], name: str, source: str) -> Workload:
    """A workload file of several event kinds: `[[event]]` tables, each with a name, a weight > 0, its own
    `transaction` and `[[event.statement]]`s; the file's other keys (group, phase, ...) apply to the mix."""
    where = f"{source} ({name})"
    events = doc["event"]
    if "statement" in doc or "transaction" in doc:
        raise UserError(f"{where}: a mix's statements and transaction belong in each [[event]]")
    if not isinstance(events, list) or not events or not all(isinstance(e, dict) for e in events):
        raise UserError(f"{where}: 'event' must be a list of tables ([[event]])")
    kinds = [_mix_event(doc, raw, i, name, source) for i, raw in enumerate(events, 1)]
    names = [k.name for _, k in kinds]
    if len(set(names)) != len(names):
        raise UserError(f"{where}: two events share a name")
    first = kinds[0][1]
    return Workload(name=name, description=first.description, group=first.group, phase=first.phase,
                    order=first.order, transaction=False,
                    statements=tuple(st for _, k in kinds for st in k.statements),
                    rows_per_event=first.rows_per_event, source=source, writes=any(k.writes for _, k in kinds),
                    mix=tuple(kinds))


def _statement(raw: Any, swhere: str) -> Statement:
    """One `[[statement]]` table, checked."""
    if not isinstance(raw, dict):
        raise UserError(f"{swhere}: expected a table")
    unknown = set(raw) - STATEMENT_KEYS
    if unknown:
        raise UserError(f"{swhere}: unknown key {sorted(unknown)[0]!r}")
    sql = raw.get("sql")
    if not isinstance(sql, str) or not sql.strip():
        raise UserError(f"{swhere}: 'sql' must be a non-empty string")
    params = raw.get("params", {})
    if not isinstance(params, dict):
        raise UserError(f"{swhere}: 'params' must be a table")
    params = {k: _check_param(v, f"{swhere} params.{k}") for k, v in params.items()}
    repeat = _positive_int(raw.get("repeat", 1), f"{swhere}.repeat")
    dialect = raw.get("dialect", {})
    if not isinstance(dialect, dict) or not all(k in engines.NAMES and isinstance(v, str)
                                                for k, v in dialect.items()):
        raise UserError(f"{swhere}: 'dialect' maps an engine ({', '.join(engines.NAMES)}) to its SQL")
    return Statement(sql=sql, repeat=repeat, params=params, dialect=dialect)


def _build(doc: dict[str, Any], name: Any, source: str) -> Workload:
    name = check_name(name, source)
    where = f"{source} ({name})"
    unknown = set(doc) - FILE_KEYS
    if unknown:
        raise UserError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    if "event" in doc:
        return _build_mix(doc, name, source)
    group = doc.get("group", "point")
    phase = doc.get("phase", "read")
    description = doc.get("description", "")
    if not isinstance(description, str):
        raise UserError(f"{where}: description must be a string")
    if group not in GROUPS:
        raise UserError(f"{where}: group must be one of {', '.join(GROUPS)}, got {group!r}")
    if phase not in PHASES:
        raise UserError(f"{where}: phase must be one of {', '.join(PHASES)}, got {phase!r}")
    transaction = doc.get("transaction", False)
    if not isinstance(transaction, bool):
        raise UserError(f"{where}: transaction must be true or false")
    rows_per_event = doc.get("rows_per_event")
    if rows_per_event not in (None, "table_size"):
        raise UserError(f"{where}: rows_per_event can only be \"table_size\"")
    raw_statements = doc.get("statement")
    if not isinstance(raw_statements, list) or not raw_statements:
        raise UserError(f"{where}: needs at least one [[statement]]")
    statements = [_statement(raw, f"{where} statement {i}") for i, raw in enumerate(raw_statements, 1)]
    workload = Workload(
        name=name, description=description, group=group, phase=phase,
        order=_positive_int(doc.get("order", 1000), f"{where}.order"), transaction=transaction,
        statements=tuple(statements),
        rows_per_event=rows_per_event, source=source,
        writes=any(re.match(r"\s*(INSERT|UPDATE|DELETE|REPLACE)\b", s.sql, re.I) for s in statements),
    )
    # Compiling once here reports placeholder mistakes when the file is read, not when a cell runs.
    for engine in engines.NAMES:
        compile_statements(workload, table_size=100, engine=engine)
    return workload


def parse_workload_file(path: Path) -> list[Workload]:
    """All catalog entries a workload file defines (one, or one per variant)."""
    source = str(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{source}: malformed TOML: {e}") from None
    except OSError as e:
        raise UserError(f"{source}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"{source}: not a text (UTF-8) file; a workload file is TOML") from None
    variants = doc.pop("variants", None)
    base_vars = doc.pop("vars", {})
    if not isinstance(base_vars, dict):
        raise UserError(f"{source}: 'vars' must be a table")
    if variants is None:
        name = doc.get("name", path.stem)
        return [_build(_substitute(doc, base_vars, source), name, source)]
    if not isinstance(variants, list) or not all(isinstance(v, dict) and "name" in v for v in variants):
        raise UserError(f"{source}: 'variants' must be a list of tables with a 'name'")
    out = []
    for v in variants:
        check_name(v["name"], f"{source} variant")
        if not isinstance(v.get("vars", {}), dict):
            raise UserError(f"{source} variant {v['name']}: 'vars' must be a table")
        unknown = set(v) - {"name", "vars", "description"}
        if unknown:
            raise UserError(f"{source} variant {v['name']}: unknown key {sorted(unknown)[0]!r}")
        merged = dict(doc, name=v["name"])
        if "description" in v:
            merged["description"] = v["description"]
        out.append(_build(_substitute(merged, {**base_vars, **v.get("vars", {})}, source), v["name"], source))
    return out


def _binds_for(spec: dict[str, Any], table_size: int, slots: dict[str, int], name: str) -> tuple[str, list[dict]]:
    """The SQL text replacing one placeholder's first use, and its binds."""
    gen = spec["gen"]
    count = spec.get("count", 1)
    binds: list[dict[str, Any]]
    if gen == "uniform":
        binds = [{"gen": {"kind": "uniform", "lo": 1, "hi": table_size}, "slot": None} for _ in range(count)]
    elif gen == "zipf":
        binds = [{"gen": {"kind": "zipf", "n": table_size, "exponent": float(spec.get("exponent", 0.8))},
                  "slot": None} for _ in range(count)]
    elif gen == "hot":
        start = spec.get("start", "middle")
        first = max(1, table_size // 2) if start == "middle" else start
        binds = [{"gen": {"kind": "fixed", "value": first + i}, "slot": None} for i in range(count)]
    elif gen == "range":
        slot = slots.setdefault(name, len(slots))
        return "? AND ?", [
            {"gen": {"kind": "uniform", "lo": 1, "hi": table_size}, "slot": slot},
            {"gen": {"kind": "ref", "slot": slot, "add": spec["size"] - 1}, "slot": None},
        ]
    else:  # digits
        return "?", [{"gen": {"kind": "digits", "groups": spec["groups"]}, "slot": None}]
    if count == 1:  # a scalar can be repeated later in the event; a list cannot
        binds[0]["slot"] = slots.setdefault(name, len(slots))
    return ", ".join("?" for _ in binds), binds


def compile_statements(workload: Workload, table_size: int, engine: str = engines.DEFAULT.name) -> dict[str, Any]:
    """The driver's view of a workload: SQL with `?`, and one bind per `?`.

    A placeholder's first use in a statement draws from that statement's generator; a later use, or a use of a
    name that an earlier statement of the event drew, repeats that value (write-only re-inserts the row it
    deleted this way).
    """
    if workload.mix:
        return {"name": workload.name, "transaction": False, "writes": workload.writes, "statements": [],
                "slots": 0, "mix": [{**compile_statements(k, table_size, engine), "weight": w}
                                    for w, k in workload.mix]}
    slots: dict[str, int] = {}
    out = [_compile_statement(s, f"{workload.source} ({workload.name}) statement {i}", table_size, slots, engine)
           for i, s in enumerate(workload.statements, 1)]
    return {"name": workload.name, "transaction": workload.transaction, "writes": workload.writes,
            "statements": out, "slots": len(slots)}


def _compile_statement(s: Statement, where: str, table_size: int, slots: dict[str, int],
                       engine: str) -> dict[str, Any]:
    binds: list[dict] = []
    drawn_here: set[str] = set()
    used: set[str] = set()

    def replace(m: re.Match[str]) -> str:
        name = m.group(1)
        if name == "table":
            return "{table}"
        used.add(name)
        spec = s.params.get(name)
        if spec is not None and name not in drawn_here:
            drawn_here.add(name)
            text, new = _binds_for(spec, table_size, slots, name)
            binds.extend(new)
            return text
        if name in slots:
            binds.append({"gen": {"kind": "ref", "slot": slots[name], "add": 0}, "slot": None})
            return "?"
        raise UserError(f"{where}: placeholder {{{name}}} has no parameter in this or an earlier statement")

    source = s.sql_for(engine)
    sql = PLACEHOLDER.sub(replace, source)
    unused = set(s.params) - used
    if unused:
        raise UserError(f"{where}: parameter {sorted(unused)[0]!r} is not used in the {engine} SQL")
    if "?" in PLACEHOLDER.sub("", source):
        raise UserError(f"{where}: write parameters as {{name}} placeholders, not '?'")
    return {"sql": sql, "repeat": s.repeat, "binds": binds}
