//! Resource usage of the driver process: CPU time and context switches, from getrusage.

use crate::job::Usage;

pub fn process() -> Usage {
    // SAFETY: getrusage fills the zeroed struct we own.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let us = |tv: libc::timeval| tv.tv_sec as f64 * 1e6 + tv.tv_usec as f64;
    Usage {
        user_us: us(ru.ru_utime),
        system_us: us(ru.ru_stime),
        voluntary_cs: ru.ru_nvcsw,
        involuntary_cs: ru.ru_nivcsw,
    }
}

pub fn delta(after: Usage, before: Usage) -> Usage {
    Usage {
        user_us: after.user_us - before.user_us,
        system_us: after.system_us - before.system_us,
        voluntary_cs: after.voluntary_cs - before.voluntary_cs,
        involuntary_cs: after.involuntary_cs - before.involuntary_cs,
    }
}

/// The calling thread's CPU so far: its CPU clock (CLOCK_THREAD_CPUTIME_ID, exact: getrusage's own total can lag
/// by a scheduler tick, a large share of a 0.1 s slice) and getrusage(RUSAGE_THREAD) for the split into user and
/// system time and for the context switches.
#[derive(Clone, Copy, Default)]
pub struct ThreadCpu {
    cpu_ns: u64,
    rusage: Usage,
}

pub fn thread() -> ThreadCpu {
    // SAFETY: clock_gettime and getrusage fill the zeroed structs we own; both exist on every Linux.
    let (ts, ru) = unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        (ts, ru)
    };
    let us = |tv: libc::timeval| tv.tv_sec as f64 * 1e6 + tv.tv_usec as f64;
    ThreadCpu {
        cpu_ns: ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64,
        rusage: Usage {
            user_us: us(ru.ru_utime),
            system_us: us(ru.ru_stime),
            voluntary_cs: ru.ru_nvcsw,
            involuntary_cs: ru.ru_nivcsw,
        },
    }
}

impl ThreadCpu {
    pub fn since(self, before: ThreadCpu) -> ThreadCpu {
        ThreadCpu { cpu_ns: self.cpu_ns.saturating_sub(before.cpu_ns), rusage: delta(self.rusage, before.rusage) }
    }

    pub fn add(&mut self, other: ThreadCpu) {
        self.cpu_ns += other.cpu_ns;
        self.rusage = Usage {
            user_us: self.rusage.user_us + other.rusage.user_us,
            system_us: self.rusage.system_us + other.rusage.system_us,
            voluntary_cs: self.rusage.voluntary_cs + other.rusage.voluntary_cs,
            involuntary_cs: self.rusage.involuntary_cs + other.rusage.involuntary_cs,
        };
    }

    /// As a process's usage reads: user + system is the CPU clock's time, split in getrusage's proportion (all user
    /// when getrusage saw none).
    pub fn usage(self) -> Usage {
        let cpu_us = self.cpu_ns as f64 / 1000.0;
        let seen = self.rusage.user_us + self.rusage.system_us;
        let user_us = if seen > 0.0 { cpu_us * self.rusage.user_us / seen } else { cpu_us };
        Usage { user_us, system_us: cpu_us - user_us, ..self.rusage }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_usage_keeps_the_clocks_total() {
        let mut cpu = ThreadCpu::default();
        let first = thread();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        cpu.add(thread().since(first));
        let usage = cpu.usage();
        assert!(usage.user_us >= 0.0 && usage.system_us >= -1e-6);
        assert!((usage.user_us + usage.system_us - cpu.cpu_ns as f64 / 1000.0).abs() < 1e-6);
        assert!(cpu.cpu_ns > 0, "the loop took some CPU");
    }
}
