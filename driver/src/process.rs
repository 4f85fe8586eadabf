//! Facts about the driver process that a run-time variant must prove: which allocator libraries are really mapped
//! (an LD_PRELOAD that failed is silent otherwise), and how much anonymous memory sits in transparent huge pages.

use serde::Serialize;

const ALLOCATOR_MARKERS: [&str; 3] = ["jemalloc", "tcmalloc", "mimalloc"];

#[derive(Debug, Serialize, Default)]
pub struct ProcessFacts {
    /// Paths of allocator libraries found in /proc/self/maps.
    pub allocators_mapped: Vec<String>,
    /// AnonHugePages of /proc/self/smaps_rollup, in kB, at the end of the run; None if unreadable.
    pub anon_huge_kb: Option<u64>,
    /// Whether this process asked the kernel not to back it with THP (prctl PR_SET_THP_DISABLE).
    pub thp_disabled: bool,
    /// The CPUs this process may run on (sched_getaffinity), at the end of the run: where the lab pinned it.
    pub cpus: Vec<usize>,
}

pub fn disable_thp() -> Result<(), String> {
    // SAFETY: prctl with integer arguments only.
    let rc = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    if rc != 0 {
        return Err(format!("prctl(PR_SET_THP_DISABLE) failed: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

pub fn facts(thp_disabled: bool) -> ProcessFacts {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut allocators: Vec<String> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|path| ALLOCATOR_MARKERS.iter().any(|m| path.contains(m)))
        .map(str::to_string)
        .collect();
    allocators.sort();
    allocators.dedup();
    let anon_huge_kb = std::fs::read_to_string("/proc/self/smaps_rollup").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("AnonHugePages:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
    });
    ProcessFacts { allocators_mapped: allocators, anon_huge_kb, thp_disabled, cpus: affinity() }
}

fn affinity() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it for this thread (pid 0), and
    // CPU_ISSET only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}
