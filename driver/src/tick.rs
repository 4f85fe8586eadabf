//! The hot loop's clock: CLOCK_MONOTONIC (the clock `std::time::Instant` reads on Linux) as whole nanoseconds, so
//! that an event's start, end and latency are a clock read and integer arithmetic, without `Instant`'s
//! `Timespec` subtraction and `Duration` conversions (about 70 of the driver's instructions per event, measured
//! with cachegrind). Instants from the rest of the driver (the shared start, the steady-state monitor, the open
//! loop's schedule) are converted through an `Anchor`: an `Instant` and a tick read back to back, so every
//! conversion of one thread shifts by the same few nanoseconds and the window's length stays exact.

use std::mem::MaybeUninit;
use std::time::{Duration, Instant};

/// Nanoseconds of CLOCK_MONOTONIC.
#[inline]
pub fn now() -> u64 {
    let mut ts = MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: clock_gettime writes the whole timespec; CLOCK_MONOTONIC always exists on Linux, so it succeeds.
    let ts = unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, ts.as_mut_ptr());
        ts.assume_init()
    };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Where `Instant`s and ticks meet, for one thread.
#[derive(Clone, Copy)]
pub struct Anchor {
    instant: Instant,
    tick: u64,
}

impl Anchor {
    pub fn new() -> Anchor {
        let instant = Instant::now();
        Anchor { instant, tick: now() }
    }

    pub fn tick(&self, i: Instant) -> u64 {
        if i >= self.instant {
            self.tick.saturating_add(nanos(i - self.instant))
        } else {
            self.tick.saturating_sub(nanos(self.instant - i))
        }
    }

    pub fn instant(&self, t: u64) -> Instant {
        if t >= self.tick {
            self.instant + Duration::from_nanos(t - self.tick)
        } else {
            self.instant - Duration::from_nanos(self.tick - t)
        }
    }
}

pub fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_follow_instants() {
        let a = Anchor::new();
        let i = Instant::now();
        let t = now();
        // Read back to back: the same clock, a few microseconds apart at most even on a loaded machine.
        assert!(a.tick(i).abs_diff(t) < 5_000_000, "{} vs {}", a.tick(i), t);
        let later = i + Duration::from_millis(1500);
        assert_eq!(a.tick(later) - a.tick(i), 1_500_000_000);
        assert_eq!(a.instant(a.tick(later)), later);
        let earlier = i - Duration::from_millis(3);
        assert_eq!(a.tick(i) - a.tick(earlier), 3_000_000);
        assert_eq!(a.instant(a.tick(earlier)), earlier);
    }
}
