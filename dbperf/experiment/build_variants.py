"""Named, composable build variants and the compiler flags they stand for."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from dbperf.errors import UserError
from dbperf.experiment.user_source import PatchFile, UserTree, patch_words
from dbperf.host.compiler import NAMED_COMPILERS

NAMED_FLAGS: dict[str, tuple[str, ...]] = {
    "O2": ("-O2",),
    "O3": ("-O3",),
    "native": ("-march=native", "-mtune=native"),
    "lto": ("-flto=auto",),
    "frame-pointers": ("-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"),
    "pgo": (),  # two builds around a training run, see pgo.py
    # server builds: relocations kept for llvm-bolt, and no gcc hot/cold splitting (BOLT splits itself; gcc's .cold
    # fragments are what llvm-bolt skips or mis-instruments), see server_bolt.py
    "bolt": ("-Wl,-q", "-fno-reorder-blocks-and-partition"),
}
DEFAULT_TRAINING = ("train-mix",)
# Seconds each PGO training workload runs (split between prepared statements and SQL text; a server's also per
# connection count): `pgo_train_seconds`. Longer training leaves less of the measured code cold in the profile.
DEFAULT_TRAIN_SECONDS = 3.0
MAX_TRAIN_SECONDS = 3600.0
# A flag is one compiler argument; it never passes through a shell, but refuse anything that is not an option.
FLAG = re.compile(r"^-[A-Za-z0-9][A-Za-z0-9_=.,+:/-]*$")
VERSION = re.compile(r"^\d+\.\d+\.\d+$")
# An `ldflags` option is one for the linker alone (-Wl,...): every recipe routes those to its links only, so a build
# with them differs from the build without them by its link (a relink, its objects the same).
LINK_FLAG = re.compile(r"^-Wl,[A-Za-z0-9_=.,+:/-]+$")


@dataclass(frozen=True)
class BuildSpec:
    sqlite_version: str  # the released version built; "" for a `tree` (its version is read from it when built)
    variants: tuple[str, ...] = ("O2",)
    cflags: tuple[str, ...] = ()
    pgo_train: tuple[str, ...] = field(default=())
    pgo_partial_training: bool = False
    pgo_train_seconds: float = DEFAULT_TRAIN_SECONDS
    tree: UserTree | None = None  # a user's tree instead of a released version (experiment/user_source.py)
    patches: tuple[PatchFile, ...] = ()  # applied in order on the lab's copy of the source
    ldflags: tuple[str, ...] = ()  # linker options: the build without them (its base) linked again with them

    @property
    def pgo(self) -> bool:
        return "pgo" in self.variants

    def flags(self) -> list[str]:
        return compile_flags(self.variants, self.cflags)

    def relink_base(self) -> BuildSpec:
        """What a build with `ldflags` relinks: the same build without them."""
        return replace(self, ldflags=())

    def label(self, origin: str | None = None) -> str:
        """`origin`: how the build lab names the source it read (a tree's commit), else as the experiment does."""
        parts = [*self.variants, *self.cflags, *pgo_words(self.pgo_partial_training, self.pgo_train_seconds),
                 *link_words(self.ldflags)]
        word = origin or (self.tree.word if self.tree else self.sqlite_version)
        return f"sqlite@{word}{patch_words(self.patches)} [{' '.join(parts)}]"


def link_words(ldflags: tuple[str, ...]) -> list[str]:
    """How a build label says its link-only options (a relink of the build without them)."""
    return [f"relinked {' '.join(ldflags)}"] if ldflags else []


def pgo_words(partial: bool, seconds: float) -> list[str]:
    """How a build label says its PGO options, when they are not the defaults."""
    return [*(["partial-training"] if partial else []),
            *([f"trained {seconds:g}s per workload"] if seconds != DEFAULT_TRAIN_SECONDS else [])]


def compile_flags(variants: tuple[str, ...], cflags: tuple[str, ...]) -> list[str]:
    """Compiler flags in order: optimisation level (O2 unless O3 is named), named variants, then cflags."""
    level = ["-O3"] if "O3" in variants else ["-O2"]
    named = [f for v in variants if v not in ("O2", "O3") for f in NAMED_FLAGS[v]]
    return [*level, *named, *cflags]


SERVER_ORIGINS = ("debian-src",)
TREE_ORIGIN = "tree"  # a server built from the user's tree (`tree`, `rev`), not a `source`
# Server PGO trains on this set (catalog/training), never on the measured catalog.
SERVER_TRAINING = ("train-mix",)
# What a server's PGO build instruments and re-optimises (`pgo_scope`, buildlab/profile_scope.py): every object, the
# recipe's query-path directories only, or the sources a first training profile showed hot (buildlab/hot_sources.py),
# the other objects the base build's.
WHOLE_PROGRAM = "whole"
QUERY_PATH = "query-path"
HOT_PATH = "hot-path"
PGO_SCOPES = (WHOLE_PROGRAM, QUERY_PATH, HOT_PATH)


@dataclass(frozen=True)
class ServerBuildSpec:
    """A server built from source by the lab: engine, where the source comes from, variants and extra flags."""
    engine: str
    origin: str = "debian-src"
    variants: tuple[str, ...] = ("O2",)
    cflags: tuple[str, ...] = ()
    compiler: str | None = None  # a named compiler (compiler.NAMED_COMPILERS); None: the user's CC
    pgo_partial_training: bool = False  # -fprofile-partial-training in the build that uses the profile
    pgo_train_seconds: float = DEFAULT_TRAIN_SECONDS
    patches: tuple[PatchFile, ...] = ()  # applied in order on the unpacked source, after Debian's own
    lean: bool = False  # the engine's leaner recipe (buildlab/recipes/: MySQL's leaves out what the lab never runs)
    tree: UserTree | None = None  # the user's checkout instead of Debian's source (origin "tree")
    pgo_scope: str = WHOLE_PROGRAM  # one of PGO_SCOPES
    ldflags: tuple[str, ...] = ()  # linker options: the build without them relinked in its kept tree
    # Debian's version, pinned: a PGO build's base is built from the version the PGO build is of (a hot-path list
    # names one version's files; the archive's newest may be another). None: the newest the archive serves.
    version: str | None = None

    @property
    def pgo(self) -> bool:
        return "pgo" in self.variants

    def relink_base(self) -> ServerBuildSpec:
        """What a build with `ldflags` relinks: the same build without them."""
        return replace(self, ldflags=())

    @property
    def bolt(self) -> bool:
        return "bolt" in self.variants

    def flags(self) -> list[str]:
        return compile_flags(self.variants, self.cflags)

    def label(self) -> str:
        with_compiler = f" with {self.compiler}" if self.compiler else ""
        parts = [*self.variants, *self.cflags, *pgo_words(self.pgo_partial_training, self.pgo_train_seconds),
                 *([f"{self.pgo_scope}-profile"] if self.pgo_scope != WHOLE_PROGRAM else []),
                 *(["lean"] if self.lean else []), *link_words(self.ldflags)]
        return f"{self.engine}@{self._source_word()}{patch_words(self.patches)} [{' '.join(parts)}]{with_compiler}"

    def _source_word(self) -> str:
        """Debian's source ("debian-src"), or the tree by its folder's name and the revision asked for
        ("tree:postgresql:REL_16_4"; the build's manifest names the commit)."""
        if self.tree is None:
            return self.origin
        return f"tree:{Path(self.tree.path).name}" + (f":{self.tree.rev}" if self.tree.rev else "")


def parse_source(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.startswith("sqlite@") or not VERSION.match(value[7:]):
        raise UserError(f"{where}: source must look like \"sqlite@3.54.1\", got {value!r}")
    return value[7:]


def _variants_and_cflags(raw: dict[str, object], where: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The `build` list (the user's order, repeats dropped) and `cflags`, checked."""
    variants = raw.get("build", ["O2"])
    if isinstance(variants, str):
        variants = [variants]
    if not isinstance(variants, list) or not all(isinstance(v, str) for v in variants):
        raise UserError(f"{where}.build: expected a list of variant names ({', '.join(NAMED_FLAGS)})")
    for v in variants:
        if v not in NAMED_FLAGS:
            raise UserError(f"{where}.build: unknown variant {v!r} (known: {', '.join(NAMED_FLAGS)})")
    if "O2" in variants and "O3" in variants:
        raise UserError(f"{where}.build: O2 and O3 exclude each other")
    cflags = raw.get("cflags", [])
    if not isinstance(cflags, list) or not all(isinstance(f, str) and FLAG.match(f) for f in cflags):
        raise UserError(f"{where}.cflags: expected a list of compiler options such as \"-DSQLITE_THREADSAFE=0\"")
    return tuple(dict.fromkeys(variants)), tuple(cflags)


def _ldflags(raw: dict[str, object], where: str, base_dir: Path | None = None) -> tuple[str, ...]:
    """`ldflags`, checked: options for the linker alone (-Wl,...), which no compile sees; a file an option reads (a
    linker script) named by its absolute path (relative to the experiment's folder, `base_dir`), and there."""
    ldflags = raw.get("ldflags", [])
    if not isinstance(ldflags, list) or not all(isinstance(f, str) and LINK_FLAG.match(f) for f in ldflags):
        raise UserError(f"{where}.ldflags: expected a list of linker options such as \"-Wl,-T,read_mostly.ld\" "
                        "(-Wl,... only: the build is its base's objects linked again)")
    for flag in ldflags:
        words = flag.split(",")[1:]
        if any(w == "-o" or w.startswith(("-o", "--output")) for w in words):
            raise UserError(f"{where}.ldflags: {flag!r} names the linker's output: the lab writes the build into its "
                            "cache itself (a library elsewhere would be measured as nothing the lab built)")
    return tuple(_files_resolved(flag, base_dir or Path.cwd(), f"{where}.ldflags") for flag in ldflags)


# Linker options that read a file: the link runs in the build's own folder, and the file's content is the build's.
FILE_OPTIONS = ("-T", "--script", "--version-script", "--dynamic-list", "--retain-symbols-file")


def _file_words(words: list[str]) -> list[tuple[int, str, str]]:
    """(index, option, path) of each word of a -Wl, flag that names a file (`--opt=path` or `--opt,path`)."""
    found = []
    for i, w in enumerate(words):
        option, eq, value = w.partition("=")
        if option in FILE_OPTIONS and eq:
            found.append((i, option + "=", value))
        elif w in FILE_OPTIONS and i + 1 < len(words):
            found.append((i + 1, "", words[i + 1]))
    return found


def _files_resolved(flag: str, base_dir: Path, where: str) -> str:
    words = flag.split(",")
    for i, prefix, value in _file_words(words):
        path = Path(value) if Path(value).is_absolute() else base_dir / value
        if not path.is_file():
            raise UserError(f"{where}: {flag!r} names {path}, which is not a file")
        words[i] = prefix + str(path.resolve())
    return ",".join(words)


def linked_files(ldflags: tuple[str, ...]) -> dict[str, str]:
    """The files the linker options read, by path, each with its content's sha256: part of a build's key, so that a
    changed linker script is a new build."""
    paths = [value for flag in ldflags for _, _, value in _file_words(flag.split(","))]
    return {p: hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in paths if Path(p).is_file()}


def _pgo_options(raw: dict[str, object], variants: tuple[str, ...], where: str) -> tuple[bool, float]:
    """`pgo_partial_training` and `pgo_train_seconds`, checked: each only with the pgo variant."""
    for key in ("pgo_partial_training", "pgo_train_seconds"):
        if key in raw and "pgo" not in variants:
            raise UserError(f"{where}.{key}: only meaningful with the \"pgo\" variant in build")
    partial = raw.get("pgo_partial_training", False)
    if not isinstance(partial, bool):
        raise UserError(f"{where}.pgo_partial_training: expected true or false")
    seconds = raw.get("pgo_train_seconds", DEFAULT_TRAIN_SECONDS)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= MAX_TRAIN_SECONDS:
        raise UserError(f"{where}.pgo_train_seconds: expected seconds per training workload, above 0 and at most "
                        f"{MAX_TRAIN_SECONDS:g}, got {seconds!r}")
    return partial, float(seconds)


def parse_server_build(raw: dict[str, object], engine: str, origin: str, where: str,
                       patches: tuple[PatchFile, ...] = (), tree: UserTree | None = None,
                       base_dir: Path | None = None) -> ServerBuildSpec:
    variants, cflags = _variants_and_cflags(raw, where)
    if "pgo_train" in raw:
        raise UserError(f"{where}.pgo_train: server builds train on the server training set "
                        f"({', '.join(SERVER_TRAINING)}), kept apart from the measured benchmarks")
    partial, seconds = _pgo_options(raw, variants, where)
    compiler = raw.get("compiler")
    if compiler is not None:
        if compiler not in NAMED_COMPILERS:
            raise UserError(f"{where}.compiler: expected one of {', '.join(map(repr, NAMED_COMPILERS))} (the default "
                            f"is the user's CC, gcc), got {compiler!r}")
        if "pgo" in variants:
            raise UserError(f"{where}.compiler: the pgo variant of server builds needs gcc (its .gcda profiles); "
                            f"drop compiler = {compiler!r} or pgo")
    lean = raw.get("lean", False)
    if not isinstance(lean, bool):
        raise UserError(f"{where}.lean: expected true or false")
    ldflags = _ldflags(raw, where, base_dir)
    if ldflags and ("pgo" in variants or "bolt" in variants):
        raise UserError(f"{where}.ldflags: a server is relinked in the kept build tree of its base, and pgo and "
                        "bolt builds are made in fresh folders: drop ldflags or pgo and bolt")
    return ServerBuildSpec(engine, origin, variants, cflags, compiler, partial, seconds, patches, lean, tree,
                           pgo_scope=_pgo_scope(raw, variants, where), ldflags=ldflags)


def _pgo_scope(raw: dict[str, object], variants: tuple[str, ...], where: str) -> str:
    """`pgo_scope`, checked: with the pgo variant, and without bolt, whose flags the base build (the objects outside
    the profile's directories) would not have."""
    scope = raw.get("pgo_scope", WHOLE_PROGRAM)
    if scope not in PGO_SCOPES:
        raise UserError(f"{where}.pgo_scope: expected one of {', '.join(PGO_SCOPES)}, got {scope!r}")
    if "pgo_scope" in raw and "pgo" not in variants:
        raise UserError(f"{where}.pgo_scope: only meaningful with the \"pgo\" variant in build")
    if scope != WHOLE_PROGRAM and "bolt" in variants:
        raise UserError(f"{where}.pgo_scope: a {scope} profile reuses the objects of the build without PGO and "
                        "BOLT, whose flags bolt changes; drop bolt or pgo_scope")
    return str(scope)


def parse_build(raw: dict[str, object], sqlite_version: str, where: str, tree: UserTree | None = None,
                patches: tuple[PatchFile, ...] = (), base_dir: Path | None = None) -> BuildSpec:
    ordered, cflags = _variants_and_cflags(raw, where)
    for key in ("compiler", "lean", "pgo_scope"):
        if key in raw:
            raise UserError(f"{where}.{key}: only for servers built from source (source = \"mysql@debian-src\")")
    if "bolt" in ordered:
        raise UserError(f"{where}.build: the bolt variant is for servers built from source (source = "
                        "\"postgres@debian-src\"), not SQLite")
    variants = list(ordered)
    pgo_train = raw.get("pgo_train")
    if pgo_train is not None and "pgo" not in variants:
        raise UserError(f"{where}.pgo_train: only meaningful with the \"pgo\" variant in build")
    if pgo_train is None:
        pgo_train = list(DEFAULT_TRAINING) if "pgo" in variants else []
    if isinstance(pgo_train, str):
        pgo_train = [pgo_train]
    if not isinstance(pgo_train, list) or not all(isinstance(t, str) and t for t in pgo_train) or (
            "pgo" in variants and not pgo_train):
        raise UserError(f"{where}.pgo_train: expected a non-empty list of workload names or files")
    partial, seconds = _pgo_options(raw, ordered, where)
    return BuildSpec(sqlite_version, ordered, cflags, tuple(pgo_train), partial, seconds, tree, patches,
                     _ldflags(raw, where, base_dir))
