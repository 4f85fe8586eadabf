"""Whether two runs had the same CPU, from what each recorded: one model name ("AMD EPYC" in a VM) covers several
generations, whose figures differ more than most effects the lab measures, so two runs' figures are comparable as
figures only when the model, the core count and the generation (family, model, stepping) agree."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CpuIdentity:
    model: str | None  # /proc/cpuinfo's model name
    cpu_id: str | None  # host/facts.py cpu_id(): None in runs recorded before the lab kept it
    cores: int | None

    @property
    def named(self) -> str:
        """The model with its generation when known: "AMD EPYC (family 25, model 17, stepping 1)"."""
        return f"{self.model or '?'}" + (f" ({self.cpu_id})" if self.cpu_id else "")

    @property
    def short(self) -> str:
        return f"{self.model or '?'}, {self.cores or '?'} cores" + (f" ({self.cpu_id})" if self.cpu_id else "")


def cpu_caveat(a: CpuIdentity, b: CpuIdentity, a_name: str, b_name: str) -> str | None:
    """A sentence when runs `a` and `b` (named as the reader knows them: "the run on record", "here") may not have
    had the same CPU, else None."""
    if a.model != b.model or a.cores != b.cores:
        return (f"The CPUs differ ({a.short} {a_name}, {b.short} {b_name}): compare the shapes (ratios, order), not "
                "the figures.")
    if bool(a.cpu_id) != bool(b.cpu_id):
        unknown, known, known_name = (a_name, b, b_name) if not a.cpu_id else (b_name, a, a_name)
        return (f"The CPU's generation is not known {unknown} (recorded before the lab kept it; {known.cpu_id} "
                f"{known_name}): one model name may be another CPU, so a figure that moved is not yet a change.")
    if a.cpu_id and b.cpu_id and a.cpu_id != b.cpu_id:
        return (f"The CPU's generation differs under one model name ({a.cpu_id} {a_name}, {b.cpu_id} {b_name}): "
                "compare the shapes (ratios, order), not the figures.")
    return None
