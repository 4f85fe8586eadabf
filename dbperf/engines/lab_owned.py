"""The settings of a server the lab starts that are the lab's own (each engine's `lab_owned_settings`): which of
them a setting name stands for, why it is the lab's, and what to do instead, so that a refusal names the remedy
that fits that setting (a fixed port is `port = N` on the target; a data directory elsewhere is
DBPERF_RUNTIME_DIR) and the one that fits where it was given (an experiment file's target, or `dbperf bisect`,
whose steps have no target of the user's).

MariaDB reads an option name in several forms (mysys' my_getopt): `-` and `_` alike, a `loose-` prefix (ignored
when unknown, taken when known), `skip-`, `enable-`, `disable-` and `maximum-` prefixes, and any unambiguous
abbreviation (`bind` is bind-address). Each form counts as the setting it stands for: `loose-bind-address` would
otherwise make a lab server listen on every address. PostgreSQL reads names exactly, case-insensitively."""

from __future__ import annotations

from dbperf import engines
from dbperf.engines.owned_reasons import GENERAL, Owned

__all__ = ["GENERAL", "REASONS", "Owned", "lab_owned_refusal", "owned_setting"]

# Each engine's reasons, from its descriptor (a test holds every lab-owned setting to one).
REASONS: dict[str, dict[str, Owned]] = {e.name: dict(e.lab_owned_reasons) for e in engines.ENGINES.values()}


MY_GETOPT_PREFIXES = ("skip_", "enable_", "disable_", "maximum_")


def _my_getopt_candidates(name: str) -> list[str]:
    """The names my_getopt may look `name` up as: without `loose-`, then without a special prefix."""
    name = name.removeprefix("loose_")
    return [name, *(name[len(p):] for p in MY_GETOPT_PREFIXES if name.startswith(p))]


def owned_setting(engine: str, key: str) -> tuple[list[str], str] | None:
    """The lab-owned settings `key` stands for and how the server reads it ("": as itself, "as": another form
    of it, "abbreviation": an abbreviation of it, or of several, which the server would refuse as ambiguous);
    None when it stands for none."""
    owned = engines.engine(engine).lab_owned_settings
    if not engines.engine(engine).reads_my_getopt_names:
        return ([key.lower()], "") if key.lower() in owned else None
    name = key.replace("-", "_").lower()
    for candidate in _my_getopt_candidates(name):
        if candidate in owned:
            return [candidate], "" if candidate == name else "as"
        starts = sorted(o for o in owned if candidate and o.startswith(candidate))
        if starts:
            return starts, "abbreviation"
    return None


def lab_owned_refusal(engine: str, key: str, where: str, bisect: bool = False) -> str | None:
    """The one-line refusal of setting `key` of a server the lab starts, when it is the lab's; None otherwise.
    `bisect`: given to `dbperf bisect` (or a study's bisect step), not to an experiment file's target."""
    found = owned_setting(engine, key)
    if found is None:
        return None
    (setting, *others), form = found
    title = engines.engine(engine).title
    if others:  # an abbreviation of several: no one reason fits, and the server would refuse it as ambiguous
        return (f"{where} config.{key}: {title} could read it as an abbreviation of "
                f"{', '.join([setting, *others[:-1]])} or {others[-1]} (settings the lab owns); give the full name "
                "of the setting meant")
    reason = REASONS.get(engine, {}).get(setting, GENERAL)
    read_as = {"": "", "as": f"{title} reads it as {setting}: ",
               "abbreviation": f"{title} reads it as an abbreviation of {setting}: "}[form]
    return f"{where} config.{key}: {read_as}{reason.why}; {reason.bisect if bisect else reason.experiment}"
