"""The static map of a binary's global and static objects: ELF symbol tables (pyelftools), `.dynsym` when the binary
is stripped, DWARF names and declaration lines where present; section, address, size, grouped by cache line. TLS and
read-only sections are set apart: they cannot be falsely shared through the binary's own data segment."""

from __future__ import annotations

import bisect
import struct
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elftools.common.exceptions import ELFError
from elftools.construct.core import ConstructError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from dbperf.errors import UserError

# Coherence granule by ELF machine: 64 B on x86 and Arm, 128 B on POWER ([MySQL bug #97777]'s machine), 256 B on z.
LINE_BY_MACHINE = {"EM_X86_64": 64, "EM_386": 64, "EM_AARCH64": 64, "EM_ARM": 64, "EM_RISCV": 64,
                   "EM_PPC64": 128, "EM_PPC": 128, "EM_S390": 256}
# Stores are found by disassembly on these (iced-x86); elsewhere "written in code" is unknown and said so.
DISASSEMBLED = {"EM_X86_64": 64, "EM_386": 32}
WRITABLE_KINDS = ("data", "bss")


@dataclass
class GlobalObject:
    name: str
    address: int
    size: int
    section: str
    kind: str  # data, bss (writable); tls; relro (read-only after relocation); read-only
    binding: str
    source: str | None = None  # DWARF declaration file:line
    store_sites: int | None = None  # instructions that store to it; None when not disassembled

    @property
    def written_in_code(self) -> bool | None:
        return None if self.store_sites is None else self.store_sites > 0

    @property
    def end(self) -> int:
        return self.address + max(self.size, 1)

    def lines(self, line: int) -> range:
        return range(self.address // line * line, self.end, line)


@dataclass
class StaticMap:
    path: str
    machine: str
    elf_type: str
    line: int
    symbol_table: str  # .symtab, or .dynsym for a stripped binary
    objects: list[GlobalObject]
    segments: list[tuple[int, int, int]]  # PT_LOAD (vaddr, offset, memsz)
    dwarf: str  # what DWARF gave
    stores: str  # how "written in code" was found
    seconds: dict[str, float] = field(default_factory=dict)
    # allocated sections (start, end, name), by start: where an access no symbol names falls (.got, .rodata, ...)
    sections: list[tuple[int, int, str]] = field(default_factory=list)
    _starts: list[int] = field(default_factory=list, repr=False)

    def writable(self) -> list[GlobalObject]:
        return [o for o in self.objects if o.kind in WRITABLE_KINDS]

    def by_line(self) -> dict[int, list[GlobalObject]]:
        """Writable (non-TLS, not read-only) objects by cache line address; an object spanning lines is in each."""
        lines: dict[int, list[GlobalObject]] = defaultdict(list)
        for o in self.writable():
            for a in o.lines(self.line):
                lines[a].append(o)
        return dict(sorted(lines.items()))

    def find(self, address: int) -> GlobalObject | None:
        """The object whose bytes hold this link-time address."""
        if not self._starts:
            self.objects.sort(key=lambda o: o.address)
            self._starts = [o.address for o in self.objects]
        i = bisect.bisect_right(self._starts, address) - 1
        # Objects can overlap (aliases); walk back over a few that start earlier.
        for j in range(i, max(i - 4, -1), -1):
            o = self.objects[j]
            if o.address <= address < o.end:
                return o
        return None

    def section_at(self, address: int) -> str | None:
        """The name of the allocated section holding this link-time address; None between sections (page
        padding of a mapping)."""
        i = bisect.bisect_right(self.sections, (address, float("inf"))) - 1
        if i >= 0 and self.sections[i][0] <= address < self.sections[i][1]:
            return self.sections[i][2]
        return None

    def candidate_lines(self) -> list[tuple[int, list[GlobalObject]]]:
        """Lines where an object written in code shares the line with one that no instruction stores to: the
        static suspects, before any run says which are hot."""
        out = []
        for address, objs in self.by_line().items():
            written = [o for o in objs if o.written_in_code]
            quiet = [o for o in objs if o.written_in_code is False]
            if written and quiet:
                out.append((address, objs))
        return out


def _kind(section) -> str:
    flags = section["sh_flags"]
    if flags & SH_FLAGS.SHF_TLS:
        return "tls"
    if not flags & SH_FLAGS.SHF_WRITE:
        return "read-only"
    if section.name.startswith(".data.rel.ro") or section.name in (".got", ".dynamic", ".init_array",
                                                                    ".fini_array"):
        return "relro"
    return "bss" if section["sh_type"] == "SHT_NOBITS" else "data"


# What a truncated or corrupt ELF makes pyelftools (or the struct reads and index look-ups on its tables) raise, at
# the header or later: sections, symbols and segments are read lazily, so the whole static map is guarded.
CORRUPT = (ELFError, ConstructError, struct.error, IndexError, KeyError, ValueError, OverflowError, EOFError,
           OSError, MemoryError)
ELF_MAGIC = b"\x7fELF"


def corrupt_elf(path: Path, e: BaseException) -> UserError:
    said = " ".join(str(e).split()) or type(e).__name__
    return UserError(f"{path}: truncated or corrupt ELF file ({said})")


def open_elf(path: Path) -> tuple[ELFFile, object]:
    try:
        f = open(path, "rb")  # noqa: SIM115 (kept open while the ELFFile reads lazily; closed by the caller)
        magic = f.read(len(ELF_MAGIC))
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}") from None
    if not magic or magic != ELF_MAGIC:
        f.close()
        raise UserError(f"{path}: empty file" if not magic else f"{path}: not an ELF file (no ELF magic number)")
    try:
        f.seek(0)
        return ELFFile(f), f
    except CORRUPT as e:
        f.close()
        raise corrupt_elf(path, e) from None


def line_size(machine: str, override: int | None, path: Path) -> int:
    if override is not None and override not in (64, 128):
        raise UserError(f"--line: expected 64 or 128, got {override}")
    if machine not in LINE_BY_MACHINE:
        raise UserError(f"{path}: unknown architecture {machine} (known: {', '.join(sorted(LINE_BY_MACHINE))})")
    return override or LINE_BY_MACHINE[machine]


BINDINGS = {0: "LOCAL", 1: "GLOBAL", 2: "WEAK", 10: "GNU_UNIQUE"}
STT_OBJECT, STT_TLS = 1, 6
SHN_LORESERVE = 0xFF00


def _raw_symbols(elf: ELFFile, symtab, sections: list) -> list[GlobalObject]:
    """ELF64 little-endian symbol tables read with struct: pyelftools' per-symbol objects take seconds on tens of
    thousands of symbols."""
    strtab = sections[symtab["sh_link"]].data()
    kinds = [(sec.name, _kind(sec)) for sec in sections]
    seen: set[tuple[str, int]] = set()
    objects = []
    for name_at, info, _other, shndx, value, size in struct.iter_unpack("<IBBHQQ", symtab.data()):
        if (info & 0xF) not in (STT_OBJECT, STT_TLS) or shndx == 0 or shndx >= SHN_LORESERVE or not name_at:
            continue  # functions, sections, undefined, absolute and common symbols
        name = strtab[name_at:strtab.index(b"\0", name_at)].decode(errors="replace")
        if (name, value) in seen or shndx >= len(kinds):
            continue
        seen.add((name, value))
        section, kind = kinds[shndx]
        objects.append(GlobalObject(name, value, size, section, kind, BINDINGS.get(info >> 4, str(info >> 4))))
    return objects


def _symbols(elf: ELFFile, path: Path) -> tuple[str, list[GlobalObject]]:
    sections = list(elf.iter_sections())
    for table in (".symtab", ".dynsym"):
        symtab = elf.get_section_by_name(table)
        if symtab is None or not hasattr(symtab, "iter_symbols"):
            continue
        if elf.elfclass == 64 and elf.little_endian:
            objects = _raw_symbols(elf, symtab, sections)
            if objects:
                return table, objects
            continue
        seen: set[tuple[str, int]] = set()
        objects = []
        for sym in symtab.iter_symbols():
            entry = sym.entry
            if entry.st_info.type not in ("STT_OBJECT", "STT_TLS") or not isinstance(entry.st_shndx, int):
                continue
            key = (sym.name, entry.st_value)
            if key in seen or not sym.name:
                continue
            seen.add(key)
            section = sections[entry.st_shndx]
            objects.append(GlobalObject(sym.name, entry.st_value, entry.st_size, section.name, _kind(section),
                                        entry.st_info.bind.removeprefix("STB_")))
        if objects:
            return table, objects
    raise UserError(f"{path}: no symbols at all (no data objects in .symtab or .dynsym)")


def _dwarf(elf: ELFFile, objects: list[GlobalObject]) -> str:
    """Declaration file:line of the variables DWARF places at a fixed address (DW_OP_addr)."""
    if not elf.has_dwarf_info() or elf.get_section_by_name(".debug_info") is None:
        return "no DWARF (stripped or built without -g): names from the symbol table only"
    by_address: dict[int, list[GlobalObject]] = defaultdict(list)
    for o in objects:
        by_address[o.address].append(o)
    dwarf = elf.get_dwarf_info()
    found = 0
    for cu in dwarf.iter_CUs():
        line_program = dwarf.line_program_for_CU(cu)
        files = line_program["file_entry"] if line_program else []
        version = cu["version"]
        for die in cu.iter_DIEs():
            if die.tag != "DW_TAG_variable" or "DW_AT_location" not in die.attributes:
                continue
            loc = die.attributes["DW_AT_location"]
            if loc.form != "DW_FORM_exprloc" or not loc.value or loc.value[0] != 0x03:  # DW_OP_addr
                continue
            address = int.from_bytes(bytes(loc.value[1:9]), "little")
            if address not in by_address or "DW_AT_decl_line" not in die.attributes:
                continue
            file_index = die.attributes.get("DW_AT_decl_file")
            name = "?"
            if file_index is not None and files:
                i = file_index.value - (1 if version < 5 else 0)
                if 0 <= i < len(files):
                    name = files[i].name.decode(errors="replace")
            for o in by_address[address]:
                o.source = f"{name}:{die.attributes['DW_AT_decl_line'].value}"
                found += 1
    return f"DWARF declaration lines for {found} objects"


def _got_targets(elf: ELFFile) -> dict[int, int]:
    """GOT slot address -> the address the dynamic linker puts there (GLOB_DAT/64 of a defined symbol, RELATIVE),
    read straight from the RELA tables: PIC code reaches exported globals through these slots."""
    if elf.elfclass != 64 or not elf.little_endian:
        return {}
    dynsym = elf.get_section_by_name(".dynsym")
    values: list[int] = []
    if dynsym is not None:
        values = [v for (_n, _i, _o, _s, v, _z) in struct.iter_unpack("<IBBHQQ", dynsym.data())]
    out: dict[int, int] = {}
    for section in elf.iter_sections():
        if section["sh_type"] != "SHT_RELA" or not section["sh_flags"] & SH_FLAGS.SHF_ALLOC:
            continue
        for offset, info, addend in struct.iter_unpack("<QQq", section.data()):
            kind, index = info & 0xFFFFFFFF, info >> 32
            if kind == 8:  # R_X86_64_RELATIVE
                out[offset] = addend
            elif kind in (1, 6) and 0 < index < len(values) and values[index]:  # R_X86_64_64, GLOB_DAT
                out[offset] = values[index] + (addend if kind == 1 else 0)
    return out


# Instructions after `lea R, [rip+X]` or `mov R, [rip+GOT slot of X]` in which a store through R counts as a store
# to X (+ displacement): the usual shape of PIC code and of struct-field stores.
FOLLOW = 6


class _StoreSites:
    """Counts, per object of a map, the instructions that store to it while the executable sections are
    disassembled (iced-x86, imported here: only the store scan needs it)."""

    def __init__(self, elf: ELFFile, objects_map: StaticMap, bitness: int) -> None:
        from iced_x86 import Code, FlowControl, InstructionInfoFactory, OpAccess, OpKind, Register

        self.written = (OpAccess.WRITE, OpAccess.READ_WRITE, OpAccess.COND_WRITE, OpAccess.READ_COND_WRITE)
        self.info = InstructionInfoFactory()
        self.absolute = elf["e_type"] == "ET_EXEC"
        self.got = _got_targets(elf) if bitness == 64 else {}
        self.leas = (Code.LEA_R64_M, Code.LEA_R32_M)
        self.got_loads = (Code.MOV_R64_RM64,)
        self.next_flow = FlowControl.NEXT
        self.memory, self.register = OpKind.MEMORY, OpKind.REGISTER
        self.no_register = Register.NONE
        self.direct_bases = (Register.RIP, Register.EIP, Register.NONE)
        self.objects_map = objects_map
        self.sites = 0
        for o in objects_map.objects:
            o.store_sites = 0

    def mark(self, address: int) -> None:
        target = self.objects_map.find(address)
        if target is not None:
            target.store_sites = (target.store_sites or 0) + 1
            self.sites += 1

    def has_memory_operand(self, ins: Any) -> bool:
        return any(ins.op_kind(i) == self.memory for i in range(ins.op_count))

    def held_address(self, ins: Any) -> int | None:
        """The object address a RIP-relative `lea R` or `mov R` from a GOT slot loads into R, else None."""
        if ins.code in self.leas:
            return ins.ip_rel_memory_address
        if ins.code in self.got_loads and ins.ip_rel_memory_address in self.got:
            return self.got[ins.ip_rel_memory_address]
        return None

    def absolute_operand(self, ins: Any) -> bool:
        """A memory operand with neither base nor index register (in a non-PIC executable, an object's address)."""
        return (ins.memory_base == self.no_register and ins.memory_index == self.no_register
                and self.has_memory_operand(ins))

    def mark_through(self, ins: Any, holding: dict[int, int]) -> None:
        """Stores through a register that holds an object's address."""
        if ins.memory_base in holding and self.has_memory_operand(ins):
            for mem in self.info.info(ins).used_memory():
                if mem.access in self.written and mem.base in holding:
                    self.mark(holding[mem.base] + mem.displacement)

    def mark_direct(self, ins: Any) -> None:
        """Stores to a RIP-relative or absolute address."""
        for mem in self.info.info(ins).used_memory():
            if mem.access in self.written and mem.base in self.direct_bases:
                self.mark(mem.displacement)

    def scan(self, decoder: Any) -> None:
        holding: dict[int, int] = {}  # register -> object address it holds
        left = 0
        absolute = self.absolute
        for ins in decoder:
            if left:
                left -= 1
                if ins.flow_control != self.next_flow:
                    holding.clear()
                    left = 0
                else:
                    self.mark_through(ins, holding)
                if ins.op_count and ins.op0_kind == self.register and ins.op0_register in holding:
                    del holding[ins.op0_register]
            if ins.is_ip_rel_memory_operand:
                held = self.held_address(ins)
                if held is not None:
                    holding[ins.op0_register] = held
                    left = FOLLOW
                    continue
            elif not absolute or not self.absolute_operand(ins):
                continue
            self.mark_direct(ins)


def _stores(elf: ELFFile, objects_map: StaticMap, bitness: int) -> str:
    """Marks objects that an instruction of an executable section stores to: RIP-relative memory operands (and
    absolute ones in non-PIC executables) that iced-x86 says are written (write, read-write, conditional write), and
    stores through a register loaded just before with the object's address (lea, or mov from its GOT slot)."""
    from iced_x86 import Decoder, DecoderOptions

    sites = _StoreSites(elf, objects_map, bitness)
    for section in elf.iter_sections():
        if not section["sh_flags"] & SH_FLAGS.SHF_EXECINSTR or section["sh_type"] != "SHT_PROGBITS":
            continue
        sites.scan(Decoder(bitness, section.data(), DecoderOptions.NONE, ip=section["sh_addr"]))
    how = "RIP-relative" + (" and absolute" if sites.absolute else "")
    return (f"{how} stores, and stores through a register just loaded with the object's address (lea or its GOT "
            f"slot), found by disassembling the executable sections (iced-x86): {sites.sites} store sites; stores "
            "through pointers passed around are not seen")


def _check_sections(elf: ELFFile, path: Path) -> None:
    """Every section with bytes in the file lies inside it: pyelftools reads a section's data with one read of its
    size, so a corrupt size would be a huge allocation rather than an error."""
    length = elf.stream_len
    for i, section in enumerate(elf.iter_sections()):
        if section["sh_type"] == "SHT_NOBITS" or not section["sh_size"]:
            continue
        if section["sh_offset"] + section["sh_size"] > length:
            name = section.name or f"#{i}"
            raise UserError(f"{path}: truncated or corrupt ELF file (section {name}: offset {section['sh_offset']}, "
                            f"size {section['sh_size']}, past the end of the file at {length} bytes)")


def _allocated_sections(elf: ELFFile) -> list[tuple[int, int, str]]:
    return sorted((s["sh_addr"], s["sh_addr"] + s["sh_size"], s.name) for s in elf.iter_sections()
                  if s["sh_flags"] & SH_FLAGS.SHF_ALLOC and s["sh_size"] and not s["sh_flags"] & SH_FLAGS.SHF_TLS)


def static_map(path: Path, line: int | None = None) -> StaticMap:
    import time

    started = time.monotonic()
    elf, handle = open_elf(path)
    try:
        machine = elf["e_machine"]
        size = line_size(machine, line, path)
        _check_sections(elf, path)
        table, objects = _symbols(elf, path)
        segments = [(s["p_vaddr"], s["p_offset"], s["p_memsz"]) for s in elf.iter_segments()
                    if s["p_type"] == "PT_LOAD"]
        m = StaticMap(str(path), machine, elf["e_type"], size, table, objects, segments, "", "",
                      sections=_allocated_sections(elf))
        m.seconds["symbols"] = round(time.monotonic() - started, 3)
        t = time.monotonic()
        try:
            m.dwarf = _dwarf(elf, objects)
        except CORRUPT as e:  # malformed or unusual DWARF: names only
            m.dwarf = f"DWARF present but not readable here ({type(e).__name__}: {e})"
        m.seconds["dwarf"] = round(time.monotonic() - t, 3)
        t = time.monotonic()
        if machine in DISASSEMBLED:
            m.stores = _stores(elf, m, DISASSEMBLED[machine])
        else:
            m.stores = f"not disassembled on {machine}: \"written in code\" unknown"
        m.seconds["stores"] = round(time.monotonic() - t, 3)
        m.seconds["total"] = round(time.monotonic() - started, 3)
        return m
    except CORRUPT as e:
        raise corrupt_elf(path, e) from None
    finally:
        handle.close()  # type: ignore[attr-defined]
