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
