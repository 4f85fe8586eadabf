//! Steady state: the warm-up lasts until the cell's throughput has settled, not a fixed time.
//!
//! Every client thread counts its completed warm-up events into a counter of its own (a relaxed store on its own
//! cache line: no locked instruction, no shared line written by two threads). Thread 0, which runs events too,
//! is also the monitor: once per `interval` it sums the counters into one throughput sample (events per second,
//! all threads together) and applies the rule below. When the rule says stop, thread 0 publishes the instant
//! (`warm_end`, ns after the shared start t0) and every thread's measured window starts there and lasts `time`:
//! the same window for all threads. Threads other than 0 read `warm_end` once per event, during the warm-up only.
//!
//! The rule: the warm-up ends at the first sample boundary at or after the minimum warm-up (the job's `warmup_s`)
//! where the last `window` samples' spread, (max - min) / mean, is at most `tolerance`: **settled**. At
//! `max_warmup_s` without that, the warm-up ends anyway and the cell says it **never settled**, with the spread
//! it had then.

use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

const UNDECIDED: u64 = u64::MAX;

/// The job's steady-state settings.
#[derive(Debug, Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
pub struct SteadyJob {
    /// Largest (max - min) / mean of the last `window` samples that counts as settled.
    pub tolerance: f64,
    /// Samples the rule looks at.
    pub window: u32,
    /// Length of one throughput sample.
    pub interval_s: f64,
    /// The warm-up ends here whether or not the throughput settled.
    pub max_warmup_s: f64,
}

impl SteadyJob {
    pub fn check(&self, min_warmup_s: f64) -> Result<(), String> {
        if !(self.tolerance.is_finite() && self.tolerance > 0.0) {
            return Err(format!("steady.tolerance must be positive, got {}", self.tolerance));
        }
        if self.window < 2 {
            return Err(format!("steady.window must be at least 2 samples, got {}", self.window));
        }
        if !(self.interval_s.is_finite() && self.interval_s > 0.0) {
            return Err(format!("steady.interval_s must be positive, got {}", self.interval_s));
        }
        let least = min_warmup_s.max(self.window as f64 * self.interval_s);
        if !(self.max_warmup_s.is_finite() && self.max_warmup_s >= least) {
            return Err(format!(
                "steady.max_warmup_s ({}) must be at least the warmup and window × interval ({least})",
                self.max_warmup_s
            ));
        }
        Ok(())
    }
}

/// What the result says about the warm-up of a steady-state cell.
#[derive(Debug, Serialize, Clone, PartialEq)]
pub struct SteadyReport {
    pub settled: bool,
    /// (max - min) / mean of the last `window` samples when the warm-up ended (None: fewer samples than that, or
    /// no event completed in them).
    pub spread: Option<f64>,
    pub tolerance: f64,
    pub window: u32,
    pub interval_s: f64,
    pub max_warmup_s: f64,
    /// The warm-up's throughput samples, events per second of all threads, in order.
    pub samples_eps: Vec<f64>,
}

/// (max - min) / mean of `samples`; None when empty or when nothing completed (mean 0).
pub fn spread(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    if mean <= 0.0 {
        return None;
    }
    let max = samples.iter().cloned().fold(f64::MIN, f64::max);
    let min = samples.iter().cloned().fold(f64::MAX, f64::min);
    Some((max - min) / mean)
}

/// The rule, fed with (seconds since t0, events completed so far by all threads). Pure: no clock of its own, so it
/// is tested on fixed sequences.
pub struct Monitor {
    job: SteadyJob,
    min_warmup_s: f64,
    samples: Vec<f64>,
    last_at_s: f64,
    last_count: u64,
    next_at_s: f64,
}

impl Monitor {
    pub fn new(job: SteadyJob, min_warmup_s: f64) -> Monitor {
        Monitor { job, min_warmup_s, samples: Vec::new(), last_at_s: 0.0, last_count: 0, next_at_s: job.interval_s }
    }

    /// Whether a sample is due at `at_s`: on the grid of intervals, and at max_warmup (a shorter last sample), so
    /// that the warm-up never runs past it by more than thread 0's current event.
    #[inline]
    pub fn due(&self, at_s: f64) -> bool {
        at_s >= self.next_at_s.min(self.job.max_warmup_s)
    }

    fn last_spread(&self) -> Option<f64> {
        let w = self.job.window as usize;
        (self.samples.len() >= w).then(|| spread(&self.samples[self.samples.len() - w..])).flatten()
    }

    /// Takes the sample ending at `at_s` (call when `due`); Some(settled) when the warm-up ends here.
    pub fn observe(&mut self, at_s: f64, count: u64) -> Option<bool> {
        let span = at_s - self.last_at_s;
        if span > 0.0 {
            self.samples.push(count.saturating_sub(self.last_count) as f64 / span);
        }
        self.last_at_s = at_s;
        self.last_count = count;
        // The next boundary on the grid of intervals; a late sample (thread 0 busy in a long event) skips the ones
        // it overran rather than taking several in a row.
        while self.next_at_s <= at_s {
            self.next_at_s += self.job.interval_s;
        }
        if at_s >= self.min_warmup_s && self.last_spread().is_some_and(|s| s <= self.job.tolerance) {
            return Some(true);
        }
        (at_s >= self.job.max_warmup_s).then_some(false)
    }

    pub fn report(self, settled: bool) -> SteadyReport {
        SteadyReport {
            settled,
            spread: self.last_spread(),
            tolerance: self.job.tolerance,
            window: self.job.window,
            interval_s: self.job.interval_s,
            max_warmup_s: self.job.max_warmup_s,
            samples_eps: self.samples,
        }
    }
}

/// A counter alone on its cache line (128 bytes: two lines, as adjacent-line prefetch pairs them), so that the
/// threads' stores do not bounce a shared line.
#[repr(align(128))]
struct Padded(AtomicU64);

/// What the threads share during an adaptive warm-up.
pub struct Shared {
    counts: Vec<Padded>,
    warm_end_ns: AtomicU64,
}

impl Shared {
    pub fn new(threads: u32) -> Shared {
        Shared {
            counts: (0..threads).map(|_| Padded(AtomicU64::new(0))).collect(),
            warm_end_ns: AtomicU64::new(UNDECIDED),
        }
    }

    /// Thread `index` has completed `n` warm-up events (only that thread writes its counter: a plain store).
    #[inline]
    pub fn count(&self, index: usize, n: u64) {
        self.counts[index].0.store(n, Ordering::Relaxed);
    }

    fn total(&self) -> u64 {
        self.counts.iter().map(|c| c.0.load(Ordering::Relaxed)).sum()
    }

    /// The end of the warm-up, once decided.
    #[inline]
    pub fn warm_end(&self, t0: Instant) -> Option<Instant> {
        match self.warm_end_ns.load(Ordering::Acquire) {
            UNDECIDED => None,
            ns => Some(t0 + Duration::from_nanos(ns)),
        }
    }

    /// Thread 0 could not start: the other threads stop warming up at once (their window still runs out, as with a
    /// fixed warm-up, and the cell fails with thread 0's error).
    pub fn give_up(&self, t0: Instant) {
        self.publish(t0, t0);
    }

    fn publish(&self, t0: Instant, at: Instant) {
        self.warm_end_ns.store((at - t0).as_nanos() as u64, Ordering::Release);
    }
}

/// Thread 0's side: the monitor, and the pipe on which the lab hears that the measured window opens.
pub struct Lead {
    monitor: Option<Monitor>,
    window_fd: Option<i32>,
    pub outcome: Option<SteadyReport>,
}

impl Lead {
    pub fn new(job: SteadyJob, min_warmup_s: f64, window_fd: Option<i32>) -> Lead {
        Lead { monitor: Some(Monitor::new(job, min_warmup_s)), window_fd, outcome: None }
    }

    /// At `now`, between thread 0's events: takes a sample if one is due and ends the warm-up if the rule says so.
    /// Returns the end of the warm-up when it was decided here.
    pub fn step(&mut self, shared: &Shared, t0: Instant, now: Instant) -> Option<Instant> {
        let at_s = (now - t0).as_secs_f64();
        let monitor = self.monitor.as_mut()?;
        if !monitor.due(at_s) {
            return None;
        }
        let settled = monitor.observe(at_s, shared.total())?;
        shared.publish(t0, now);
        self.outcome = self.monitor.take().map(|m| m.report(settled));
        if let Some(fd) = self.window_fd.take() {
            signal_window(fd);
        }
        Some(now)
    }
}

/// Tells the lab that the measured window opens: one line, `open SECONDS` on CLOCK_MONOTONIC (the clock of Rust's
/// Instant and of Python's time.monotonic, so the lab can schedule its end-of-window sample inside the window), on
/// the pipe it handed over, then closes it. A lab that went away is not the cell's problem: a failed write is
/// ignored.
fn signal_window(fd: i32) {
    use std::io::Write;
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given. The lab passed `fd` for this purpose only
    // (job.window_fd); nothing else owns it, and the File closes it when dropped here.
    let (clock, mut pipe) =
        unsafe { (libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts), std::fs::File::from_raw_fd(fd)) };
    let line = if clock == 0 { format!("open {}.{:09}\n", ts.tv_sec, ts.tv_nsec) } else { "open\n".to_string() };
    let _ = pipe.write_all(line.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(tolerance: f64, window: u32, max_warmup_s: f64) -> SteadyJob {
        SteadyJob { tolerance, window, interval_s: 1.0, max_warmup_s }
    }

    /// Feeds per-second event counts, one sample a second; returns (second the warm-up ended, settled, report).
    fn run(m: &mut Monitor, per_second: &[u64]) -> Option<(f64, bool)> {
        let mut total = 0;
        for (i, n) in per_second.iter().enumerate() {
            total += n;
            let at = (i + 1) as f64;
            assert!(m.due(at));
            if let Some(settled) = m.observe(at, total) {
                return Some((at, settled));
            }
            assert!(!m.due(at + 0.5));
        }
        None
    }

    #[test]
    fn spread_is_range_over_mean() {
        assert_eq!(spread(&[]), None);
        assert_eq!(spread(&[0.0, 0.0]), None);
        assert_eq!(spread(&[100.0, 100.0, 100.0]), Some(0.0));
        let s = spread(&[90.0, 100.0, 110.0]).unwrap();
        assert!((s - 0.2).abs() < 1e-12, "{s}");
    }

    #[test]
    fn a_ramp_settles_once_the_last_window_is_flat() {
        // Cold caches: 100, 400, 800, then 1000 ± 2 %. Window 3 at 5 %: [800, 1000, 990] spreads 21 %; the first
        // window inside tolerance is [1000, 990, 1010] (2 %), which ends at second 6.
        let mut m = Monitor::new(job(0.05, 3, 30.0), 0.0);
        assert_eq!(run(&mut m, &[100, 400, 800, 1000, 990, 1010, 1000]), Some((6.0, true)));
        let r = m.report(true);
        assert_eq!(r.samples_eps, vec![100.0, 400.0, 800.0, 1000.0, 990.0, 1010.0]);
        assert!((r.spread.unwrap() - 0.02).abs() < 1e-12);
    }

    #[test]
    fn the_minimum_warmup_holds_even_when_flat_from_the_start() {
        let mut m = Monitor::new(job(0.05, 2, 30.0), 4.0);
        assert_eq!(run(&mut m, &[1000; 10]), Some((4.0, true)));
    }

    #[test]
    fn a_noisy_cell_gives_up_at_max_warmup_with_its_spread() {
        // Alternating 800 and 1200: every window of 3 spreads 400 / 933 or 400 / 1067, never within 10 %.
        let seq: Vec<u64> = (0..20).map(|i| if i % 2 == 0 { 800 } else { 1200 }).collect();
        let mut m = Monitor::new(job(0.10, 3, 8.0), 0.0);
        assert_eq!(run(&mut m, &seq), Some((8.0, false)));
        let r = m.report(false);
        assert!(!r.settled);
        assert_eq!(r.samples_eps.len(), 8);
        // The last window is [1200, 800, 1200]: 400 / 1066.7.
        assert!((r.spread.unwrap() - 0.375).abs() < 1e-9, "{:?}", r.spread);
    }

    #[test]
    fn max_warmup_off_the_grid_ends_the_warmup_there() {
        let mut m = Monitor::new(job(0.01, 2, 2.5), 0.0);
        assert_eq!(m.observe(1.0, 1000), None);
        assert_eq!(m.observe(2.0, 1500), None); // 1000 then 500: 67 %
        assert!(!m.due(2.4));
        assert!(m.due(2.5));
        assert_eq!(m.observe(2.5, 1800), Some(false)); // a half-second sample: 600/s
        let r = m.report(false);
        assert_eq!(r.samples_eps, vec![1000.0, 500.0, 600.0]);
        assert!((r.spread.unwrap() - 100.0 / 550.0).abs() < 1e-9);
    }

    #[test]
    fn nothing_completed_never_settles() {
        let mut m = Monitor::new(job(0.05, 3, 5.0), 0.0);
        assert_eq!(run(&mut m, &[0; 10]), Some((5.0, false)));
        assert_eq!(m.report(false).spread, None);
    }

    #[test]
    fn a_late_sample_covers_the_time_it_overran() {
        // Thread 0 came back from a long event at 2.5 s: one sample of 2.5 s, the next boundary at 3 s.
        let mut m = Monitor::new(job(0.05, 2, 30.0), 0.0);
        assert!(!m.due(0.9));
        assert_eq!(m.observe(2.5, 2500), None);
        assert!(!m.due(2.9));
        assert!(m.due(3.0));
        assert_eq!(m.observe(3.0, 3000), Some(true));
        assert_eq!(m.report(true).samples_eps, vec![1000.0, 1000.0]);
    }

    #[test]
    fn settings_that_can_never_settle_are_refused() {
        assert!(job(0.05, 3, 30.0).check(2.0).is_ok());
        assert!(job(0.05, 3, 2.0).check(0.0).is_err()); // 3 samples of 1 s need 3 s
        assert!(job(0.05, 3, 4.0).check(5.0).is_err()); // below the minimum warm-up
        assert!(job(0.0, 3, 30.0).check(0.0).is_err());
        assert!(job(0.05, 1, 30.0).check(0.0).is_err());
    }

    #[test]
    fn shared_counts_and_the_published_end() {
        let s = Shared::new(3);
        let t0 = Instant::now();
        assert_eq!(s.warm_end(t0), None);
        s.count(0, 5);
        s.count(2, 7);
        assert_eq!(s.total(), 12);
        let mut lead = Lead::new(job(0.5, 2, 30.0), 0.0, None);
        assert_eq!(lead.step(&s, t0, t0 + Duration::from_millis(500)), None); // not due
        assert_eq!(lead.step(&s, t0, t0 + Duration::from_secs(1)), None); // one sample only
        s.count(1, 12);
        let end = t0 + Duration::from_secs(2);
        assert_eq!(lead.step(&s, t0, end), Some(end));
        assert_eq!(s.warm_end(t0), Some(end));
        let report = lead.outcome.unwrap();
        assert!(report.settled);
        assert_eq!(report.samples_eps, vec![12.0, 12.0]);
    }
}
