"""Issue 23, `dbperf layout`: truncated and corrupt ELF files are one line naming the file and what is wrong, exit 2
(item 3, unit: the files are made from /bin/true's bytes); the trace under valgrind is bounded by a budget, shows
progress, says how much of the run it saw, and leaves nothing running (item 8)."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from tests.test_layout import _in_process

TRUE = Path("/bin/true")
needs_true = pytest.mark.skipif(not TRUE.is_file() or TRUE.read_bytes()[:6] != b"\x7fELF\x02\x01",
                                reason="needs a 64-bit little-endian /bin/true")


def _true() -> bytearray:
    return bytearray(TRUE.read_bytes())


def _section_header(data: bytes, index: int) -> int:
    """Offset of section header INDEX in an ELF64 file."""
    e_shoff, = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, = struct.unpack_from("<H", data, 0x3A)
    return e_shoff + index * e_shentsize


def _section_index(data: bytes, name: bytes) -> int:
    e_shnum, e_shstrndx = struct.unpack_from("<HH", data, 0x3C)
    strtab_at, = struct.unpack_from("<Q", data, _section_header(data, e_shstrndx) + 24)
    for i in range(e_shnum):
        name_at, = struct.unpack_from("<I", data, _section_header(data, i))
        start = strtab_at + name_at
        if data[start:data.index(b"\0", start)] == name:
            return i
    raise AssertionError(f"no section {name!r} in {TRUE}")


def _patched(field_at, fmt: str, value: int):
    def patch(data: bytearray) -> bytearray:
        struct.pack_into(fmt, data, field_at(data), value)
        return data
    return patch


def _dynsym_field(offset: int):
    return lambda data: _section_header(data, _section_index(data, b".dynsym")) + offset


CORRUPT = {
    "truncated to 20,000 bytes": lambda d: d[:20_000],
    "the 64-byte header only": lambda d: d[:64],
    "EI_CLASS patched": lambda d: d[:4] + b"\x07" + d[5:],
    "EI_DATA patched": lambda d: d[:5] + b"\x09" + d[6:],
    "e_shoff = 10**12": _patched(lambda d: 0x28, "<Q", 10**12),
    "e_phoff = 10**12": _patched(lambda d: 0x20, "<Q", 10**12),
    "e_shstrndx out of range": _patched(lambda d: 0x3E, "<H", 999),
    "e_shnum = 65535": _patched(lambda d: 0x3C, "<H", 0xFFFF),
    ".dynsym size not a whole number of symbols": _patched(_dynsym_field(32), "<Q", 0x4F9),
    ".dynsym linked to a missing string table": _patched(_dynsym_field(40), "<I", 999),
    ".dynsym past the end of the file": _patched(_dynsym_field(24), "<Q", 10**12),
}


@pytest.mark.unit
@needs_true
@pytest.mark.parametrize("case", list(CORRUPT))
def test_a_corrupt_elf_is_one_line_naming_the_file_and_exit_2(tmp_path, monkeypatch, capsys, case):
    path = tmp_path / "corrupt"
    path.write_bytes(bytes(CORRUPT[case](_true())))
    code, err = _in_process(monkeypatch, capsys, "layout", str(path))
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dbperf: error: {path}: "), err
    assert "Traceback" not in err


@pytest.mark.unit
@pytest.mark.parametrize(("content", "says"), [(b"", "empty file"), (b"#!/bin/sh\necho hi\n", "not an ELF file"),
                                                (b"\x7fEL", "not an ELF file")])
def test_an_empty_or_foreign_file_says_what_it_is(tmp_path, monkeypatch, capsys, content, says):
    path = tmp_path / "x"
    path.write_bytes(content)
    code, err = _in_process(monkeypatch, capsys, "layout", str(path))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"dbperf: error: {path}: {says}"), err


@pytest.mark.unit
@needs_true
def test_truncations_and_flipped_header_bytes_never_end_in_a_traceback(tmp_path, monkeypatch, capsys):
    """Every cut of /bin/true's last pages, and random bytes in its ELF header and section headers: a report (exit
    0) or one line (exit 2), whatever pyelftools, struct or the disassembler makes of them."""
    original = _true()
    rng = random.Random(23)
    variants = [original[:n] for n in range(len(original) - 4096, len(original), 509)]
    shdrs = _section_header(original, 0)
    for _ in range(40):
        data = bytearray(original)
        for _ in range(3):
            at = rng.choice([rng.randrange(0x10, 0x40), rng.randrange(shdrs, len(data))])
            data[at] = rng.randrange(256)
        variants.append(data)
    path = tmp_path / "variant"
    for data in variants:
        path.write_bytes(bytes(data))
        code, err = _in_process(monkeypatch, capsys, "layout", str(path))
        assert code in (0, 2), err
        if code == 2:
            assert len(err.strip().splitlines()) == 1 and err.startswith(f"dbperf: error: {path}: "), err
