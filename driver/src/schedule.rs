//! Open-loop arrivals: when each event is due, independent of when the previous one ended (sysbench --rate,
//! pgbench -R). Latency is measured from the due time, so a server that stalls shows the stall in every event
//! that queued behind it instead of in one slow event (coordinated omission).
//!
//! Events the target did not get to (the backlog at the end, the events skipped past a latency limit) are counted
//! arithmetically, never one by one: at a rate far beyond the target's, a second's backlog is millions of events,
//! and counting them one at a time made the driver spin for as long (or for ever, once the gap rounded to 0 ns).

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, Poisson};
use serde::{Deserialize, Serialize};

/// The highest rate (events per second of a cell, all threads together) the driver schedules; dbperf's
/// `rate` key (dbperf/experiment/load_model.py MAX_RATE) refuses more at parse time. Above it an event's due time
/// is less than 10 ns after the previous one's (ten ticks of the 1 ns clock): no event fits in such a gap, so
/// the figure could only ever be "not kept up", and a due time would be a fraction of a clock tick.
pub const MAX_RATE: f64 = 1e8;

#[derive(Debug, Deserialize, Serialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Evenly spaced: one event every 1/rate seconds.
    #[default]
    Uniform,
    /// A Poisson process: exponentially distributed gaps of mean 1/rate (pgbench -R, BenchBase).
    Poisson,
}

/// One thread's schedule: its share of the cell's rate. Due times are kept in f64 ns from `start` and computed
/// from the event's index (uniform) or summed in f64 (Poisson), so that a gap below 1 ns neither rounds to 0 nor
/// accumulates rounding errors.
pub struct Schedule {
    start: Instant,
    gap_ns: f64,
    /// Uniform: the first event's offset (threads are staggered across one gap) and the next event's index.
    phase_ns: f64,
    index: u64,
    /// Poisson: the next event's due time, ns from `start`.
    next_ns: f64,
    exp: Option<Exp<f64>>,
    rng: SmallRng,
}

impl Schedule {
    /// `rate` events per second for this thread, starting at `start`. The first gap is drawn too, and uniform
    /// threads are staggered across one gap, so that threads do not all fire at the same instant.
    pub fn new(rate: f64, arrivals: Arrivals, start: Instant, seed: u64, index: u32, threads: u32) -> Schedule {
        let gap_ns = 1e9 / rate;
        let exp = match arrivals {
            Arrivals::Uniform => None,
            Arrivals::Poisson => Some(Exp::new(1.0).expect("rate 1 is valid")),
        };
        let rng = SmallRng::seed_from_u64(seed ^ 0x0005_EED0_FA11_u64.wrapping_mul(index as u64 + 1));
        let phase_ns = gap_ns * index as f64 / threads as f64;
        let mut s = Schedule { start, gap_ns, phase_ns, index: 0, next_ns: 0.0, exp, rng };
        if s.exp.is_some() {
            s.advance();
        }
        s
    }

    fn next_offset_ns(&self) -> f64 {
        match self.exp {
            None => self.phase_ns + self.index as f64 * self.gap_ns,
            Some(_) => self.next_ns,
        }
    }

    pub fn due(&self) -> Instant {
        self.start + Duration::from_nanos(self.next_offset_ns() as u64)
    }

    /// On to the next event.
    pub fn advance(&mut self) {
        match &self.exp {
            None => self.index += 1,
            Some(e) => self.next_ns += self.gap_ns * e.sample(&mut self.rng),
        }
    }

    /// Passes over every event due before `t`, in O(1) whatever the rate, and says how many there were; the next
    /// event is then the first one due at or after `t`.
    pub fn skip_before(&mut self, t: Instant) -> u64 {
        let t_ns = t.saturating_duration_since(self.start).as_nanos() as f64;
        match self.exp {
            None => {
                // The events due before t are indices 0..k with phase + i × gap < t; the guess from the division
                // is corrected to agree exactly with next_offset_ns (one step at most, from f64 rounding).
                let due = |i: u64| self.phase_ns + i as f64 * self.gap_ns;
                let mut k = ((t_ns - self.phase_ns) / self.gap_ns).ceil().max(0.0) as u64;
                while k > 0 && due(k - 1) >= t_ns {
                    k -= 1;
                }
                while due(k) < t_ns {
                    k += 1;
                }
                let skipped = k.saturating_sub(self.index);
                self.index = self.index.max(k);
                skipped
            }
            Some(e) => {
                if self.next_ns >= t_ns {
                    return 0;
                }
                // The next arrival (already drawn) is before t. A Poisson process is memoryless: the arrivals in
                // (next, t) are Poisson(rate × (t − next)) and the first one after t is t + Exp(rate) later, whatever
                // came before. So the count is drawn from that law, not its expectation: it is distributed exactly
                // as counting the arrivals one by one would be (a backlog of a sustained rate stays a small
                // integer, often 0, as it was), seeded like every draw of the schedule, at O(1) cost.
                let lambda = (t_ns - self.next_ns) / self.gap_ns;
                let between = if lambda > 0.0 {
                    Poisson::new(lambda).map(|p| p.sample(&mut self.rng) as u64).unwrap_or(0)
                } else {
                    0
                };
                self.next_ns = t_ns + self.gap_ns * e.sample(&mut self.rng);
                1 + between
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events due in [start, start + 1 s), counted one by one as a reference.
    fn count_one_by_one(rate: f64, arrivals: Arrivals, seed: u64) -> u64 {
        let start = Instant::now();
        let end = start + Duration::from_secs(1);
        let mut s = Schedule::new(rate, arrivals, start, seed, 0, 1);
        let mut n = 0;
        while s.due() < end {
            n += 1;
            s.advance();
        }
        n
    }

    fn count_at_once(rate: f64, arrivals: Arrivals, seed: u64, index: u32, threads: u32) -> u64 {
        let start = Instant::now();
        let mut s = Schedule::new(rate, arrivals, start, seed, index, threads);
        s.skip_before(start + Duration::from_secs(1))
    }

    #[test]
    fn rates_hold() {
        assert_eq!(count_one_by_one(1000.0, Arrivals::Uniform, 1), 1000);
        let poisson = count_one_by_one(1000.0, Arrivals::Poisson, 1);
        // Poisson(1000): sd about 32; 6 sd either side.
        assert!((800..1200).contains(&poisson), "{poisson}");
    }

    #[test]
    fn uniform_counts_agree_with_counting_one_by_one() {
        for rate in [1.0, 3.0, 7.0, 1000.0, 999_999.0, 1e6] {
            assert_eq!(count_at_once(rate, Arrivals::Uniform, 1, 0, 1), count_one_by_one(rate, Arrivals::Uniform, 1));
        }
        // Staggered threads: each of 4 threads at a quarter of the rate has its share, none more.
        let total: u64 = (0..4).map(|i| count_at_once(250.0, Arrivals::Uniform, 1, i, 4)).sum();
        assert_eq!(total, 1000);
    }

    #[test]
    fn any_rate_is_counted_at_once() {
        // 1e12 events/s gives gaps of 0.001 ns: counting them one by one never ended (the gap rounded to 0 ns).
        assert_eq!(count_at_once(1e12, Arrivals::Uniform, 1, 0, 1), 1_000_000_000_000);
        assert_eq!(count_at_once(MAX_RATE, Arrivals::Uniform, 1, 0, 1), 100_000_000);
        let poisson = count_at_once(1e12, Arrivals::Poisson, 1, 0, 1);
        // Poisson(1e12): sd 1e6; 6 sd either side.
        assert!(poisson.abs_diff(1_000_000_000_000) < 6_000_000, "{poisson}");
    }

    #[test]
    fn poisson_counts_have_the_law_of_counting_one_by_one() {
        // The mean over 200 seeds of Poisson(1000) counts: sd of the mean about 2.2; 6 sd either side.
        let n = 200;
        let at_once: u64 = (0..n).map(|seed| count_at_once(1000.0, Arrivals::Poisson, seed, 0, 1)).sum();
        let one_by_one: u64 = (0..n).map(|seed| count_one_by_one(1000.0, Arrivals::Poisson, seed)).sum();
        for sum in [at_once, one_by_one] {
            let mean = sum as f64 / n as f64;
            assert!((mean - 1000.0).abs() < 14.0, "{mean}");
        }
    }

    #[test]
    fn skipping_moves_on_to_the_first_event_due_at_or_after() {
        let start = Instant::now();
        let t = start + Duration::from_millis(10);
        let mut s = Schedule::new(1000.0, Arrivals::Uniform, start, 1, 0, 1);
        // Due at 0, 1, ..., 9 ms: ten before t; the next is due at t itself.
        assert_eq!(s.skip_before(t), 10);
        assert_eq!(s.due(), t);
        assert_eq!(s.skip_before(t), 0);
        s.advance();
        assert_eq!(s.due(), t + Duration::from_millis(1));

        let mut p = Schedule::new(1000.0, Arrivals::Poisson, start, 1, 0, 1);
        p.skip_before(t);
        assert!(p.due() >= t);
        assert_eq!(p.skip_before(t), 0);
    }

    #[test]
    fn a_window_after_the_start_counts_only_its_own_events() {
        let start = Instant::now();
        let mut s = Schedule::new(100.0, Arrivals::Uniform, start, 1, 0, 1);
        // Due every 10 ms: [100 ms, 300 ms) holds the events at 100, 110, ..., 290 ms.
        assert_eq!(s.skip_before(start + Duration::from_millis(100)), 10);
        assert_eq!(s.skip_before(start + Duration::from_millis(300)), 20);
        assert_eq!(s.skip_before(start), 0);
    }
}
