//! Open-loop arrivals: when each event is due, independent of when the previous one ended (sysbench --rate,
//! pgbench -R). Latency is measured from the due time, so a server that stalls shows the stall in every event
//! that queued behind it instead of in one slow event (coordinated omission).

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp};
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, Serialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Evenly spaced: one event every 1/rate seconds.
    #[default]
    Uniform,
    /// A Poisson process: exponentially distributed gaps of mean 1/rate (pgbench -R, BenchBase).
    Poisson,
}

/// One thread's schedule: its share of the cell's rate.
pub struct Schedule {
    next: Instant,
    gap_ns: f64,
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
        let mut s = Schedule { next: start, gap_ns, exp, rng };
        match s.exp {
            None => s.next += Duration::from_nanos((gap_ns * index as f64 / threads as f64) as u64),
            Some(_) => s.advance(),
        }
        s
    }

    pub fn due(&self) -> Instant {
        self.next
    }

    pub fn advance(&mut self) {
        let gap = match &self.exp {
            None => self.gap_ns,
            Some(e) => self.gap_ns * e.sample(&mut self.rng),
        };
        self.next += Duration::from_nanos(gap as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_in_one_second(arrivals: Arrivals) -> u64 {
        let start = Instant::now();
        let end = start + Duration::from_secs(1);
        let mut s = Schedule::new(1000.0, arrivals, start, 1, 0, 1);
        let mut n = 0;
        while s.due() < end {
            n += 1;
            s.advance();
        }
        n
    }

    #[test]
    fn rates_hold() {
        assert_eq!(count_in_one_second(Arrivals::Uniform), 1000);
        let poisson = count_in_one_second(Arrivals::Poisson);
        // Poisson(1000): sd about 32; 6 sd either side.
        assert!((800..1200).contains(&poisson), "{poisson}");
    }
}
