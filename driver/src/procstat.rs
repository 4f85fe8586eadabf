//! CPU time and context switches of a server's processes, read from /proc: the process whose pid the job names
//! and all its descendants (PostgreSQL's postmaster and backends; MariaDB's one process and its threads).
//! Children that exited and were reaped count through the parent's cutime/cstime; their context switches are
//! not in /proc and are lost, which the caller reports.

use std::collections::HashMap;
use std::fs;

use serde::Serialize;

use crate::job::Usage;

#[derive(Debug, Serialize, Clone, Copy, Default)]
pub struct ServerSample {
    pub usage: Usage,
    pub processes: usize,
}

fn clock_ticks_per_s() -> f64 {
    // SAFETY: sysconf has no memory effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// (ppid, utime, stime, cutime, cstime) from /proc/PID/stat; the command may contain spaces and parentheses.
fn stat(pid: u32) -> Option<(u32, u64, u64, u64, u64)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // after the command: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
    Some((
        f.get(1)?.parse().ok()?,
        f.get(11)?.parse().ok()?,
        f.get(12)?.parse().ok()?,
        f.get(13)?.parse().ok()?,
        f.get(14)?.parse().ok()?,
    ))
}

fn context_switches(pid: u32) -> (i64, i64) {
    let mut total = (0, 0);
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else { return total };
    for task in tasks.flatten() {
        let Ok(status) = fs::read_to_string(task.path().join("status")) else { continue };
        for line in status.lines() {
            let value = |l: &str| l.split_whitespace().nth(1).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
            if line.starts_with("voluntary_ctxt_switches:") {
                total.0 += value(line);
            } else if line.starts_with("nonvoluntary_ctxt_switches:") {
                total.1 += value(line);
            }
        }
    }
    total
}

/// The servers' process trees' usage, one reading of /proc's parents for all (a slices run's servers, at one
/// instant); None where a side has no server to sample. Reads nothing when none has.
pub fn sample_each(roots: &[Option<u32>]) -> Vec<Option<ServerSample>> {
    if roots.iter().all(Option::is_none) {
        return vec![None; roots.len()];
    }
    let parents = parents();
    roots.iter().map(|root| root.map(|r| tree(r, &parents))).collect()
}

/// Every process's parent, by pid.
fn parents() -> HashMap<u32, u32> {
    let mut parents: HashMap<u32, u32> = HashMap::new();
    if let Ok(entries) = fs::read_dir("/proc") {
        for e in entries.flatten() {
            if let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) {
                if let Some((ppid, ..)) = stat(pid) {
                    parents.insert(pid, ppid);
                }
            }
        }
    }
    parents
}

/// The CPU and context switches of `root` and its descendants.
fn tree(root: u32, parents: &HashMap<u32, u32>) -> ServerSample {
    let mut members = vec![root];
    let mut i = 0;
    while i < members.len() {
        let p = members[i];
        members.extend(parents.iter().filter(|(_, pp)| **pp == p).map(|(c, _)| *c));
        i += 1;
    }
    let hz = clock_ticks_per_s();
    let mut usage = Usage::default();
    let mut processes = 0;
    for pid in members {
        let Some((_, utime, stime, cutime, cstime)) = stat(pid) else { continue };
        processes += 1;
        // Reaped children are in the parent's cutime/cstime; live ones are counted themselves.
        usage.user_us += (utime + cutime) as f64 / hz * 1e6;
        usage.system_us += (stime + cstime) as f64 / hz * 1e6;
        let (v, nv) = context_switches(pid);
        usage.voluntary_cs += v;
        usage.involuntary_cs += nv;
    }
    ServerSample { usage, processes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_server_is_sampled_from_one_reading_and_a_side_without_one_is_none() {
        let me = std::process::id();
        let out = sample_each(&[Some(me), None, Some(me)]);
        assert_eq!(out.len(), 3);
        assert!(out[1].is_none());
        for s in [out[0], out[2]] {
            let s = s.expect("this process is sampled");
            assert!(s.processes >= 1);
        }
        assert!(sample_each(&[None, None]).iter().all(Option::is_none));
    }
}
