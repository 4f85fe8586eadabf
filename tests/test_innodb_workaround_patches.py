"""The InnoDB busy-wait workarounds of [Callaghan 2024-10-23] as patches (dbperf/studies/data/experiments/patches/):
each applies, with the build lab's own patch command, to the upstream files of the Debian release the probes fetched
(read from their cache, never fetched here: skipped when it is not there); the experiment files that carry them
parse, name every patch, and give each patch set a build key of its own. Nothing built."""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from dbperf.buildlab import server_build
from dbperf.buildlab.patches import apply_patches, files_touched
from dbperf.buildlab.recipes.mariadb import RECIPE as MARIADB
from dbperf.buildlab.recipes.mysql import RECIPE as MYSQL
from dbperf.experiment.model import Target
from dbperf.experiment.spec import parse_experiment
from dbperf.experiment.user_source import PatchFile
from dbperf.host.compiler import find_compiler
from dbperf.layout.findings import linker_script
from dbperf.layout.fix import BASE_SUFFIX, FIXED_SUFFIX, ab_experiment
from dbperf.probes.server_source import cached_files

pytestmark = pytest.mark.unit

EXPERIMENTS = Path(__file__).resolve().parents[1] / "dbperf" / "studies" / "data" / "experiments"
FILES = {"mysql": EXPERIMENTS / "innodb-workarounds-mysql.toml",
         "mariadb": EXPERIMENTS / "innodb-workarounds-mariadb.toml"}
SERIES = {"mysql": "9.7.", "mariadb": "10.11."}  # the releases the patches were written against


def _patched_targets(engine: str) -> list[Target]:
    return [t for t in parse_experiment(FILES[engine]).targets if t.server_build and t.server_build.patches]


def _named(patch: PatchFile) -> list[str]:
    """The files a patch changes, from its own +++ lines (-p1 strips the b/)."""
    return re.findall(r"^\+\+\+ b/(\S+)", Path(patch.path).read_text(), re.M)


def _patches() -> list[tuple[str, PatchFile]]:
    return list(dict.fromkeys((e, p) for e in FILES for t in _patched_targets(e)
                              for p in t.server_build.patches))  # type: ignore[union-attr]


@pytest.mark.parametrize(("engine", "patch"), _patches(), ids=lambda v: v if isinstance(v, str) else v.name)
def test_each_patch_applies_to_the_release_the_probes_fetched(engine: str, patch: PatchFile, tmp_path: Path):
    if shutil.which("patch") is None:
        pytest.skip("no patch program (apt install patch)")
    names = _named(patch)
    found = cached_files(engine, names)
    if found is None:
        pytest.skip(f"{engine}'s source files {', '.join(names)} are not in the probes' cache (dbperf probe "
                    f"innodb-{engine} fetches them once)")
    tree, provenance = found
    assert provenance["version"].split(":")[-1].startswith(SERIES[engine])
    copy = tmp_path / "src"
    for name in names:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tree / name, copy / name)
    assert files_touched(Path(patch.path).read_bytes(), copy) == names
    apply_patches((patch,), copy, tmp_path / "patch.log", f"{engine} {patch.name}")
    for name in names:  # changed, and the change is the workaround's, citing its source
        after = (copy / name).read_text()
        assert after != (tree / name).read_text() and "dbperf workaround (Mark Callaghan" in after


def test_the_experiments_parse_and_name_every_patch_once_on_its_own_engine():
    patches = EXPERIMENTS / "patches"
    used = {}
    for engine, path in FILES.items():
        e = parse_experiment(path)
        assert e.base == "debian" and e.order == "slices" and list(e.threads) == [1]
        assert [b.name for b in e.benchmarks] == ["point-query", "update-index"]
        assert {t.server_build.engine for t in e.targets if t.server_build} == {engine}
        for t in _patched_targets(engine):
            for p in t.server_build.patches:  # type: ignore[union-attr]
                assert Path(p.path).parent == patches and Path(p.path).name.startswith(f"{engine}-")
                assert p.sha256 == hashlib.sha256(Path(p.path).read_bytes()).hexdigest()
                used[Path(p.path).name] = engine
    assert sorted(used) == sorted(p.name for p in patches.glob("*.patch"))
    # MariaDB never took ut::random_from_interval: no old-PRNG column there
    assert "mariadb-old-prng.patch" not in used and "mysql-old-prng.patch" in used


@pytest.mark.parametrize(("engine", "recipe", "package", "version"), [
    ("mysql", MYSQL, "mysql-9.7", "9.7.2-4"), ("mariadb", MARIADB, "mariadb", "1:10.11.18-0+deb12u1")])
def test_each_patch_set_is_a_build_of_its_own_and_settings_are_not(engine, recipe, package, version):
    cc = find_compiler()
    targets = {t.name: t.server_build for t in parse_experiment(FILES[engine]).targets}
    keys = {name: server_build._key(s, package, version, cc, recipe) for name, s in targets.items() if s}
    patch_sets = {tuple(p.sha256 for p in s.patches) for s in targets.values() if s}
    assert len(set(keys.values())) == len(patch_sets)  # one build per patch set: configs share their build
    plain = targets["debian"]
    assert plain is not None and not plain.patches
    for name, spec in targets.items():
        assert spec is not None and (keys[name] == keys["debian"]) == (not spec.patches)
        if spec.patches:  # the key follows the patch's content, not its name
            renamed = replace(spec, patches=tuple(replace(p, name="x.patch") for p in spec.patches))
            changed = replace(spec, patches=tuple(replace(p, sha256="0" * 64) for p in spec.patches))
            assert server_build._key(renamed, package, version, cc, recipe) == keys[name]
            assert server_build._key(changed, package, version, cc, recipe) != keys[name]
    if engine == "mysql":  # the post's knob and combination: settings on the builds the patches already make
        assert keys["spin-delay-5"] == keys["debian"] and keys["published"] == keys["old-prng"]


def test_the_layout_fix_goes_on_a_patched_target_as_on_any_other(tmp_path: Path):
    """`dbperf layout --fix` relinks a patched MySQL target with the fragment, in an A/B experiment written to its
    work folder: the target's patches, relative to the experiment file, still found there and still in the keys; the
    A/B's base is the patched build itself (MySQL's cmake gives every object -fdata-sections), the fixed build its
    relink."""
    script = tmp_path / "fragment.ld"
    script.write_text(linker_script(["btr_search_enabled"], 64))
    original = next(t for t in parse_experiment(FILES["mysql"]).targets if t.name == "old-prng")
    (tmp_path / "ab").mkdir()
    ab = tmp_path / "ab" / "ab.toml"
    ab.write_text(ab_experiment(FILES["mysql"], original, "update-index", 2, script))
    targets = {t.name: t.server_build for t in parse_experiment(ab).targets}
    assert sorted(targets) == ["old-prng" + BASE_SUFFIX, "old-prng" + FIXED_SUFFIX]
    base, fixed = targets["old-prng" + BASE_SUFFIX], targets["old-prng" + FIXED_SUFFIX]
    assert original.server_build is not None and base is not None and fixed is not None
    assert [(p.path, p.sha256) for p in fixed.patches] == [(p.path, p.sha256) for p in original.server_build.patches]
    assert base.cflags == fixed.cflags == () and not original.server_build.cflags
    assert fixed.ldflags == (f"-Wl,-T,{script}",) and fixed.relink_base() == base
    cc = find_compiler()
    key = {name: server_build._key(s, "mysql-9.7", "9.7.2-4", cc, MYSQL) for name, s in
           (("original", original.server_build), ("base", base), ("fixed", fixed))}
    assert key["base"] == key["original"] != key["fixed"]  # the stock build is the base: one build, not two
