"""The servers' own functions the probes time, read from the release's source (server_source.py): where each one is
(file, first line, last line or the end of its braces) and the SHA-256 of its lines in the release the catalog was
written against. A release whose text differs stops the probe with one line saying which function changed: its
timing would not be the function the figure names.

What a function needs from the rest of the server (typedefs, ut_ad, the CPU-feature flag set by ut_crc32_init) is
stood in for by the probe's harness (c/innodb_*.cc), above the extracted text, and said there."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbperf.buildlab.debian_source import Announce
from dbperf.errors import UserError
from dbperf.probes.server_source import server_files

ONE_LINE = ""


@dataclass(frozen=True)
class Excerpt:
    """Lines of `path`: from the one line equal to `start` to the line equal to `end` after it, or (no `end`) to
    the line that closes the braces opened from `start` on (`end` = ONE_LINE: the first line alone)."""
    what: str
    path: str
    start: str
    sha256: str
    end: str | None = None
    namespace: str = ""  # the namespace the lines sit in, in the source (the harness cannot see it otherwise)


@dataclass(frozen=True)
class ServerRelease:
    engine: str  # whose Debian source package (dbperf/engines)
    series: str  # the release the checksums were taken from, e.g. "9.7"
    excerpts: tuple[Excerpt, ...]

    def paths(self) -> list[str]:
        return sorted({e.path for e in self.excerpts})


def _braced_end(lines: list[str], first: int) -> int:
    """The index of the line closing the braces opened from lines[first] on (none of the excerpts has a brace in a
    comment or a string; a checksum would catch one that came to)."""
    depth, opened = 0, False
    for i in range(first, len(lines)):
        depth += lines[i].count("{") - lines[i].count("}")
        opened = opened or "{" in lines[i]
        if opened and depth <= 0:
            return i
    raise ValueError("its braces never close")


def excerpt_lines(text: str, excerpt: Excerpt) -> str:
    """The excerpt's lines of `text`, or a UserError saying why they cannot be found."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.rstrip() == excerpt.start]
    if len(starts) != 1:
        raise UserError(f"{excerpt.path}: {excerpt.what}: its first line {excerpt.start!r} occurs {len(starts)} "
                        "times (once expected): the source changed")
    first = starts[0]
    try:
        if excerpt.end == ONE_LINE:
            last = first
        elif excerpt.end is None:
            last = _braced_end(lines, first)
        else:
            last = next(i for i in range(first, len(lines)) if lines[i].rstrip() == excerpt.end)
    except (ValueError, StopIteration):
        raise UserError(f"{excerpt.path}: {excerpt.what}: no end after line {first + 1}: the source changed") \
            from None
    return "\n".join(lines[first:last + 1]) + "\n"


def digest(lines: str) -> str:
    return hashlib.sha256(lines.encode()).hexdigest()


def checked_text(release: ServerRelease, tree: Path, version: str) -> str:
    """The release's excerpts in catalog order, each in its namespace, after checking each against its checksum."""
    parts = []
    for e in release.excerpts:
        lines = excerpt_lines((tree / e.path).read_text(errors="replace"), e)
        if digest(lines) != e.sha256:
            raise UserError(f"{release.engine} {version}: {e.what} ({e.path}) is not the text the probe catalog "
                            f"was written against ({release.engine} {release.series}; sha256 {digest(lines)[:12]}, "
                            f"expected {e.sha256[:12]}): review it and update dbperf/probes/server_code.py")
        where = f"/* {e.what}: {e.path}, {release.engine} {version} */\n"
        parts.append(where + (f"namespace {e.namespace} {{\n{lines}}}\n" if e.namespace else lines))
    return "\n".join(parts)


def extracted(release: ServerRelease, announce: Announce | None = None) -> tuple[str, dict[str, Any]]:
    """(the checked text, its provenance: package, version and each function's file and checksum); `announce` is
    told of a download before it starts."""
    tree, provenance = server_files(release.engine, release.paths(), announce)
    text = checked_text(release, tree, provenance["version"])
    functions = [{"what": e.what, "path": e.path, "sha256": e.sha256} for e in release.excerpts]
    return text, {**provenance, "functions": functions}


_UT = "storage/innobase/ut/"
_INC = "storage/innobase/include/"

MYSQL = ServerRelease("mysql", "9.7", (
    Excerpt("ut::spin_wait_pause_multiplier", _UT + "ut0ut.cc", "ulong spin_wait_pause_multiplier = 50;",
            "a9132eced2d7d224008cc801ba3c750bfb7d394d5c0cae26699d1662b3f53c16", end=ONE_LINE, namespace="ut"),
    Excerpt("UT_RELAX_CPU", _INC + "ut0ut.h", "#if defined(HAVE_PAUSE_INSTRUCTION)",
            "c69730b322b5d6f8c66b13d410f3f172b63a4c74e62c12f3f5b8ffb37d13a7d2", end="#endif"),
    Excerpt("UT_LOW_PRIORITY_CPU", _INC + "ut0ut.h", "#if defined(HAVE_HMT_PRIORITY_INSTRUCTION)",
            "afc90b5b96a3701f5bc8316682a4f1e71cc8960c7707cd3dc549e6a72eca9668",
            end="#endif"),
    Excerpt("ut_delay", _UT + "ut0ut.cc", "ulint ut_delay(ulint delay) {",
            "527a8816a844a680e72f94d2ebc6fe4e12480480b3fe73581fc1e29f50dfee20"),
    Excerpt("my_timer_cycles", "mysys/my_rdtsc.cc", "ulonglong my_timer_cycles() {",
            "4d34cff0dbcc71c1bfb5a6efe2cf1221ccc59472c4aa32508effc6efaa84dfad"),
    Excerpt("crc32_hash_uint64", _INC + "ut0crc32.h", "#ifndef CRC32_DEFAULT",
            "dc2b33e0a020d10f3731eead59ef6bdc61a03bae1001069733f2328aebd77160",
            end="#endif /* !CRC32_DEFAULT */"),
    Excerpt("ut::hash_uint64 (declaration)", _INC + "ut0rnd.h",
            "[[nodiscard]] static inline uint64_t hash_uint64(uint64_t value);",
            "49cc11d8c79c05931de328d6c774955187d49b6be2228657a3eb3a43ed69b937",
            end=ONE_LINE, namespace="ut"),
    Excerpt("ut::detail::random_seed", _UT + "ut0rnd.cc",
            "thread_local uint64_t random_seed = ut::this_thread_hash + my_timer_cycles();",
            "97f289d897926b3325318d6c134fb446344d7ab7c342beca3e2977afb4b94f54",
            end=ONE_LINE,
            namespace="ut::detail"),
    Excerpt("ut::detail::tab_hash_lookup_table", _UT + "ut0rnd.cc", "alignas(ut::INNODB_CACHE_LINE_SIZE)",
            "98b1a44f52099671c987c6cce2f2c45f465e827ef6369364cc096aa8687bc93f",
            namespace="ut::detail"),
    Excerpt("ut::random_64", _INC + "ut0rnd.h", "static inline uint64_t random_64() {",
            "5e535ad91ae325165aa584910b598723848b4125953997c7d2e7d9603915a2cb", namespace="ut"),
    Excerpt("ut::random_64_fast", _INC + "ut0rnd.h", "static inline uint64_t random_64_fast() {",
            "87b33c0336bfe6e8f246f544a44f9898df68b4525577f217d103ad1e3f2f6340",
            namespace="ut"),
    Excerpt("ut::random_from_interval_gen", _INC + "ut0rnd.h", "template <uint64_t random_64_func()>",
            "50dfe36c9a45e5ab8adab7282fce5571ffbe5ad181e59725d34835c8b8d952d7",
            namespace="ut"),
    Excerpt("ut::random_from_interval", _INC + "ut0rnd.h",
            "static inline uint64_t random_from_interval(uint64_t low, uint64_t high) {",
            "8c397769dd5c779baea121e4b5f79ce0fc32d4a645ebdfac7a42aeca0a6407e4", namespace="ut"),
    Excerpt("ut::random_from_interval_fast", _INC + "ut0rnd.h",
            "static inline uint64_t random_from_interval_fast(uint64_t low, uint64_t high) {",
            "72c57c0b9ce35b7617f9e66f434b780b1e94264b1d1b5176088bac3ac7c579b4", namespace="ut"),
    Excerpt("ut::hash_uint64", _INC + "ut0rnd.h", "static inline uint64_t hash_uint64(uint64_t value) {",
            "5077d4c2d296021f542b926de7a0d0c9b506e123b74aa1ee7f42a431a9f49c8c",
            namespace="ut"),
))

MARIADB = ServerRelease("mariadb", "10.11", (
    Excerpt("HAVE_PAUSE_INSTRUCTION", "include/my_cpu.h",
            "#if defined __i386__ || defined __x86_64__ || defined _M_IX86 || defined _M_X64",
            "d0038bc0f60dba20477d86391ec08b9b5c8c17c242e6a9ecf642b283131e27fe", end="#endif"),
    Excerpt("MY_RELAX_CPU", "include/my_cpu.h", "static inline void MY_RELAX_CPU(void)",
            "d5635eecd909bb1195bcbce2e0aa854fcf920dcd4330a71ca45cee126efec4d8"),
    Excerpt("my_timer_cycles", "include/my_rdtsc.h", "static inline ulonglong my_timer_cycles(void)",
            "8a15c88563a72331664c526998470424a9d41f39444e5ac499c1a30f98a353b6"),
    Excerpt("my_cpu_relax_multiplier", "mysys/my_cpu.c", "unsigned my_cpu_relax_multiplier = 200;",
            "dffa93c196f6d3e333e22600fc13629164b40e0b33855b53ab4bffa883fb5d49",
            end=ONE_LINE),
    Excerpt("PAUSE4, PAUSE16", "mysys/my_cpu.c", "#define PAUSE4  MY_RELAX_CPU(); MY_RELAX_CPU(); MY_RELAX_CPU(); "
            "MY_RELAX_CPU()",
            "95cec813ef65c3bd42b67bcc16a7c36f1a59af779ff23b4b9a2680bc2a9e5122",
            end="#define PAUSE16 PAUSE4; PAUSE4; PAUSE4; PAUSE4"),
    Excerpt("my_cpu_init", "mysys/my_cpu.c", "void my_cpu_init(void)",
            "cbd5e2a87d7e8512cf807f607630f43fe3c5ab2a330e18e2b26e6c0cca183cfe"),
    Excerpt("ut_delay", "include/my_cpu.h", "static inline void ut_delay(unsigned delay)",
            "b70c6218fd5afd951fa900ae8e89b9e75acc51f49b9edc379eab6f9305a7411f"),
    Excerpt("ut_rnd_current", _UT + "ut0rnd.cc", "std::atomic<uint32_t> ut_rnd_current;",
            "75b4364baddaae96aba06479114b20db2ebbe0ea8aac178ea9f380bf90ecfbed",
            end=ONE_LINE),
    Excerpt("ut_rnd_gen", _INC + "ut0rnd.h", "inline uint32_t ut_rnd_gen()",
            "0dada21cd14f4f1c8084bcdd5dd1a813557a98f8685d838d0f266427bc1814b1"),
    Excerpt("ut_rnd_interval", _INC + "ut0rnd.h", "inline ulint ut_rnd_interval(ulint n)",
            "c63cb500bce1a342c5e80d28fe9cd554b3f7e26a524d1eeb6839453ef0d5255f"),
))

# found by the engine each release names, so that no table here is keyed by an engine name
RELEASES = {r.engine: r for r in (MYSQL, MARIADB)}
