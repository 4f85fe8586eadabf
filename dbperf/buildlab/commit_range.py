"""The commits a `dbperf bisect --tree` searches: GOOD, then every commit of `git rev-list --first-parent --reverse
GOOD..BAD` (oldest first, BAD last), as `git bisect --first-parent` walks a history of merges: a merged branch is
one step, its merge commit, and the commits inside it are not candidates (each builds on its own base, not on the
step before it). Read with user_tree.py's read-only git (the checkout is never touched); every refusal one line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dbperf.buildlab.user_tree import _commit, _git, _out
from dbperf.errors import UserError
from dbperf.experiment.user_source import REV
from dbperf.tools import tail

SEP = "\x1f"  # between the fields of one commit in git's --format (a unit separator: never in a subject)


@dataclass(frozen=True)
class Commit:
    hash: str  # the full hash
    subject: str
    author: str  # "Name <email>"


def _resolved(tree: Path, rev: str, what: str) -> str:
    if not REV.match(rev):
        raise UserError(f"bisect {what}: expected a git revision (a commit hash, branch or tag), got {rev!r}")
    commit = _commit(tree, rev)
    if commit is None:
        raise UserError(f"bisect {what}: {rev!r} is not a commit of the checkout {tree}")
    return commit


def commit_range(tree: Path, good: str, bad: str) -> list[Commit]:
    """GOOD and the first-parent commits after it up to BAD, oldest first; a folder that is not a checkout, an
    unknown revision, GOOD not an ancestor of BAD, or nothing between them: one line."""
    if not tree.is_dir():
        raise UserError(f"bisect --tree: {tree} is not a folder")
    top = _git(tree, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise UserError(f"bisect --tree: {tree} is not a git checkout "
                        f"({tail(top.stderr, 1) or 'git rev-parse failed'})")
    first, last = _resolved(tree, good, "GOOD"), _resolved(tree, bad, "BAD")
    if first == last:
        raise UserError(f"bisect: GOOD ({good}) and BAD ({bad}) are the same commit {first[:12]}: nothing to bisect")
    if _git(tree, "merge-base", "--is-ancestor", first, last).returncode != 0:
        raise UserError(f"bisect: GOOD ({good}, {first[:12]}) is not an ancestor of BAD ({bad}, {last[:12]}): give the "
                        "older commit first, on BAD's history")
    after = _listed(tree, "rev-list", "--first-parent", "--reverse", f"{first}..{last}")
    if not after or after[-1].hash != last:
        raise UserError(f"bisect: BAD ({bad}) is not on the first-parent history after GOOD ({good}): give a GOOD that "
                        "BAD's first parents reach")
    return [commit_of(tree, first), *after]


def commit_of(tree: Path, commit: str) -> Commit:
    """One commit of the checkout, by its hash (the answer's)."""
    (found,) = _listed(tree, "rev-list", "--no-walk", commit)
    return found


def _listed(tree: Path, *args: str) -> list[Commit]:
    """The commits a rev-list names, each with its subject and author (one git command for all)."""
    lines = _out(tree, *args, "--no-commit-header", f"--format=%H{SEP}%an <%ae>{SEP}%s").splitlines()
    return [Commit(h, subject, author) for h, author, subject in (line.split(SEP, 2) for line in lines if line)]
