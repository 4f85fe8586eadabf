"""The dbperf command line: one module per command group, each only parsing its arguments, calling a use case
(dbperf/usecases/) and printing what it returns; here they are put together in the order `--help` lists them.
Bad input is one line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import typer
from typer._click import exceptions as click_errors  # Typer's own click: its parameter errors

from dbperf.cli import (
    bisect,
    build,
    calibrate,
    catalog,
    compare,
    explain,
    fleet,
    history,
    layout,
    probe,
    report,
    run,
    study,
)
from dbperf.cli.common import StdoutWriteError, err_console, flush_stdout, guard_stdout, stdout_failed
from dbperf.errors import UserError
from dbperf.runner import interrupts

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="dbperf: a performance lab for database engines.")
app.command()(run.run)
app.command()(run.ladder)
app.command()(build.build)
app.command()(report.report)
app.command("import")(report.import_command)
app.command()(explain.profile)
app.command()(explain.diff)
app.command()(explain.check)
app.command()(explain.explain)
app.command()(probe.probe)
app.command("list")(catalog.list_benchmarks)
app.command()(catalog.keys)
app.add_typer(history.history_app, name="history")
app.command()(history.series)
app.command()(compare.compare)
app.command()(bisect.bisect)
app.command()(calibrate.calibrate)
app.add_typer(study.study_app, name="study")
app.command()(history.regressions)
app.command()(layout.layout)
app.command()(catalog.version)
app.add_typer(fleet.fleet_app, name="fleet")
app.command()(fleet.scheduler)
app.command()(fleet.worker)


class _Stopped(Exception):
    """A KeyboardInterrupt (Ctrl-C, or SIGTERM/SIGHUP as interrupts.Interrupted) carried out of a command past Typer,
    which turns one into a silent `exit 130` (typer 0.29's core._main), losing the line that says so and which
    signal it was (an interrupted `dbperf build` said nothing and exited 130 on SIGTERM)."""

    def __init__(self, interrupt: KeyboardInterrupt) -> None:
        super().__init__()
        self.interrupt = interrupt


def _carried(command: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(command)  # Typer reads the parameters from the wrapped function
    def carried(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt as interrupt:
            raise _Stopped(interrupt) from None
    return carried


def _carry_interrupts(group: typer.Typer) -> None:
    """Every command of `group` and its sub-groups wrapped by _carried."""
    for info in group.registered_commands:
        if info.callback is not None:
            info.callback = _carried(info.callback)
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _carry_interrupts(sub.typer_instance)


_carry_interrupts(app)


def _usage_error(e: click_errors.UsageError) -> NoReturn:
    """Typer's parameter errors (`history show abc`, `--threads x`, a missing argument) as one line, like every
    other bad input, instead of a usage banner and a boxed message."""
    names: list[str] = []
    ctx = e.ctx
    while ctx is not None and ctx.parent is not None:
        names.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    where = f"{' '.join(names)}: " if names else ""
    err_console.print(f"dbperf: error: {where}{e.format_message()} (--help shows the options)", markup=False,
                      highlight=False, soft_wrap=True)
    sys.exit(2)


def _typer_shows(e: click_errors.ClickException) -> NoReturn:
    from typer import rich_utils
    rich_utils.rich_format_error(e)
    sys.exit(e.exit_code)


def main() -> None:
    interrupts.install()
    guard_stdout()
    try:
        _dispatch()
    except SystemExit as done:
        # Before the interpreter's own flush at exit, whose failure would be a message no user can act on.
        flush_stdout(done.code)
        raise


def _dispatch() -> NoReturn:
    """The command, and every way it can end as one line and an exit code."""
    try:
        code = app(standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except click_errors.NoArgsIsHelpError as e:  # the help, as Typer shows it
        _typer_shows(e)
    except click_errors.UsageError as e:
        _usage_error(e)
    except click_errors.ClickException as e:
        _typer_shows(e)
    except typer.Abort:
        err_console.print("dbperf: aborted", highlight=False)
        sys.exit(1)
    except UserError as e:
        err_console.print(f"dbperf: error: {e}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    except (KeyboardInterrupt, _Stopped) as caught:
        # Interrupted outside a matrix run (building, starting servers, probing): nothing measured to report.
        interrupt = caught.interrupt if isinstance(caught, _Stopped) else caught
        err_console.print(f"dbperf: interrupted ({interrupts.reason(interrupt)})", highlight=False)
        sys.exit(interrupts.exit_code(interrupt))
    except StdoutWriteError as e:  # `dbperf report R > /dev/full`: a full disk, an I/O error
        stdout_failed(e)
        sys.exit(1)
