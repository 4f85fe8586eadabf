"""mkdocs hook (`hooks:` in mkdocs.yml): the reference pages are generated at build time from the sources the lab
itself reads, so they cannot drift from it. The experiment-file reference comes from the declarative key table
(the one `dbperf keys` prints); the command reference from the CLI's own Typer app (the one `dbperf --help` prints).
Nothing is written into docs/: the pages are added to the build as generated files."""

from __future__ import annotations

import importlib
import re
import sys
import tomllib
import unicodedata
from pathlib import Path
from typing import Any

import typer  # Typer carries its own click: its commands and parameters are read by duck typing
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
KEY_TABLE = "dbperf.experiment.keys"  # the declarative key table; moves with it if it moves


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    # This checkout's dbperf, not whatever copy the environment has installed (a shared or editable install).
    sys.path.insert(0, str(ROOT))
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    files.append(File.generated(config, "experiment-file.md", content=experiment_file_page()))
    files.append(File.generated(config, "commands.md", content=commands_page()))
    files.append(File.generated(config, "studies-on-record.md", content=studies_page()))
    return files


def cell(text: str) -> str:
    """Text for a Markdown table cell: one line, pipes escaped outside code spans, HTML's `<` as text."""
    parts = re.split(r"(`[^`]*`)", " ".join(text.split()))
    return "".join(p if p.startswith("`") else p.replace("|", r"\|").replace("<", "&lt;") for p in parts)


def source_links(sources: tuple[str, ...]) -> str:
    """A study's sources (`Author, "Title" ... (YYYY-MM-DD)`) as links to their entries on the sources page, by the
    key it gives them (`Nielsen 2014-01-20`, `MySQL bug #97777`): a source the page lacks fails the strict build."""
    links = []
    for source in sources:
        bug = re.search(r"MySQL bug #(\d+)", source)
        found = re.match(r'(?P<author>[^,"]+),\s*".*\((?P<date>\d{4}-\d{2}-\d{2})\)\s*$', source)
        if bug:
            key = f"MySQL bug #{bug.group(1)}"
        elif found:
            key = f"{found['author'].split()[-1]} {found['date']}"
        else:
            links.append(cell(source))
            continue
        slug = re.sub(r"[^a-z0-9]+", "-", unicodedata.normalize("NFKD", key).encode("ascii", "ignore").decode().lower())
        links.append(f"[{cell(key)}](sources.md#{slug.strip('-')})")
    return ", ".join(links) or "–"


def code(text: str) -> str:
    return f"`{text}`" if text else ""


def experiment_file_page() -> str:
    keys = importlib.import_module(KEY_TABLE)
    out = ["# Experiment-file reference", "",
           "Every key of an experiment file's sections and of a workload file, with its type, default, unit and "
           f"meaning. Generated when this site is built from the key table (`{KEY_TABLE.replace('.', '/')}.py`), "
           "the same table `dbperf keys` prints and the parser checks against: an unknown key is one line and "
           "exit 2.", "",
           "Durations are written `\"500ms\"`, `\"2s\"`, `\"5m\"`, `\"1h\"` (or a number of seconds). The examples "
           "under `examples/` are experiment files that parse (a test checks each); the [demo](demo.md) shows one "
           "in full.", ""]
    for section, declared in keys.SECTIONS.items():
        out += [f"## {section}", "", "| key | type | default | unit | meaning |", "|---|---|---|---|---|"]
        for k in declared:
            out.append(f"| `{k.name}` | {cell(k.kind)} | {cell(code(k.default))} | {cell(k.unit)} | {cell(k.doc)} |")
        out.append("")
    return "\n".join(out)


def cli_app() -> typer.Typer:
    """The Typer app behind the `dbperf` script, found from pyproject.toml's entry point."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module = importlib.import_module(scripts["dbperf"].split(":")[0])
    app = module.app
    assert isinstance(app, typer.Typer), f"{module.__name__}.app is not a Typer app"
    return app


def plain(text: str | None) -> str:
    """Help text as the terminal shows it: Rich's markup escapes undone."""
    return (text or "").replace("\\[", "[").strip()


def param_row(param: Any) -> str:
    if param.param_type_name == "option":
        names = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
        default = param.default if param.show_default is not False else None
        shown = "" if default in (None, False, "", ()) else f"`{default}`"
    else:
        names = f"`{(param.name or '').upper()}`" + ("" if param.required else " (optional)")
        shown = ""
    return f"| {names} | {cell(plain(getattr(param, 'help', None)))} | {shown} |"


def usage(param: Any) -> str:
    if param.param_type_name != "argument":
        return ""
    name = (param.name or "").upper() + ("..." if param.nargs == -1 else "")
    return name if param.required else f"[{name}]"


def command_section(cmd: Any, path: str, depth: int) -> list[str]:
    out = [f"{'#' * depth} {path}", "", cell(plain(cmd.help)).replace(r"\|", "|"), ""]
    ctx = cmd.context_class(cmd, info_name=path)
    if hasattr(cmd, "list_commands"):  # a group
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                out += command_section(sub, f"{path} {name}", depth + 1)
        return out
    out += ["```", " ".join([path, "[OPTIONS]", *map(usage, cmd.params)]).rstrip(), "```", ""]
    params = [p for p in cmd.params if not getattr(p, "hidden", False) and p.name != "help"]
    if params:
        out += ["| argument or option | meaning | default |", "|---|---|---|", *map(param_row, params), ""]
    return out


def commands_page() -> str:
    group: Any = typer.main.get_command(cli_app())
    out = ["# Commands", "",
           "Every `dbperf` command with its arguments and options, generated when this site is built from the CLI "
           "itself (what `dbperf COMMAND --help` prints). Bad input to any of them is one line on stderr and exit "
           "2.", ""]
    ctx = group.context_class(group, info_name="dbperf")
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is not None and not cmd.hidden:
            out += command_section(cmd, f"dbperf {name}", 2)
    return "\n".join(out)


def studies_page() -> str:
    """The studies (dbperf/studies/data/) and, for each, its run on record (docs/studies/NAME.md) or that it has
    none yet: written by `dbperf study record`, so the page follows what is recorded."""
    model = importlib.import_module("dbperf.studies.model")
    record = importlib.import_module("dbperf.studies.record")
    out = ["# Studies on record", "",
           "Each study of [Studies](studies.md) with its last run put on record (`dbperf study record NAME DIR`): "
           "the summary as it was, dated, with the host. A later `dbperf study run NAME` compares its figures with "
           "the record, and its steps with the results kept beside it (`docs/studies/NAME/STEP`).", "",
           "| study | sources | what | takes | on record | run | results kept |", "|---|---|---|---|---|---|---|"]
    for name in model.study_names():
        s = model.load_study(name)
        page = ROOT / "docs" / "studies" / f"{name}.md"
        doc = record.recorded(name)
        if page.is_file() and doc is None:  # its figures unreadable: the page still is the record
            out.append(f"| `{name}` | {source_links(s.sources)} | {cell(s.title)} | {cell(s.duration)} | "
                       f"[{name}](studies/{name}.md) | ? | ? |")
        elif page.is_file() and doc is not None:
            host = doc.host or {}
            run = (f"{record.started_when(doc.started or None)}, {doc.run_mode}, "
                   f"{host.get('cpu', '?')}, {host.get('cores', '?')} cores")
            kept = ", ".join(f"`{step}`" for step in record.recorded_results(doc)) or (
                "no (recorded before they were)" if any(step.kind == "experiment" for step in s.steps)
                else "none (no experiment step)")
            out.append(f"| `{name}` | {source_links(s.sources)} | {cell(s.title)} | {cell(s.duration)} | "
                       f"[{name}](studies/{name}.md) | {cell(run)} | {kept} |")
        else:
            out.append(f"| `{name}` | {source_links(s.sources)} | {cell(s.title)} | {cell(s.duration)} | not yet | | |")
    return "\n".join(out) + "\n"
