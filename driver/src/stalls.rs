//! Where a slices run's sides spend time outside their own slices. An event counts for the slice it started in
//! (turn.rs), so one that runs past its slice's end takes that time from the next side's slice: a write side's
//! checkpoint or fsync near its turn's end is measured as a hole in another target's turn. Each side keeps the time
//! its events ran over ("spill", taken at the switch, off the hot loop) and the checkpoints it ran at the start of
//! its own turns (turn_checkpoint.rs), so that its result says how much of its cost landed where.

use crate::job::TurnStalls;

/// An overrun longer than this is a stall (a checkpoint, an fsync, the kernel throttling a write), not the event
/// that happened to be in flight when the slice ended: events of the catalog's workloads take microseconds.
pub(crate) const STALL_NS: u64 = 1_000_000;

/// Count, sum and longest of some durations (ns).
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub(crate) struct Durations {
    pub(crate) count: u64,
    pub(crate) sum_ns: u64,
    pub(crate) max_ns: u64,
}

impl Durations {
    pub(crate) fn record(&mut self, ns: u64) {
        self.count += 1;
        self.sum_ns += ns;
        self.max_ns = self.max_ns.max(ns);
    }

    fn add(&mut self, o: &Durations) {
        self.count += o.count;
        self.sum_ns += o.sum_ns;
        self.max_ns = self.max_ns.max(o.max_ns);
    }
}

/// One side's time outside its own slices, over its measured slices.
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub(crate) struct SideStalls {
    /// Per measured slice a thread left: how far its last event ran past the slice's end.
    pub(crate) spill: Durations,
    /// Of those, the overruns longer than STALL_NS.
    pub(crate) stalls: u64,
    /// The checkpoints this side ran at the start of its turns (turn_checkpoint.rs).
    pub(crate) checkpoint: Durations,
}

impl SideStalls {
    /// A thread leaves a measured slice of this side `ns` after its end.
    pub(crate) fn left(&mut self, ns: u64) {
        self.spill.record(ns);
        self.stalls += u64::from(ns > STALL_NS);
    }

    pub(crate) fn add(&mut self, o: &SideStalls) {
        self.spill.add(&o.spill);
        self.stalls += o.stalls;
        self.checkpoint.add(&o.checkpoint);
    }

    pub(crate) fn report(&self, turn_checkpoint: bool) -> TurnStalls {
        let s = |ns: u64| ns as f64 / 1e9;
        TurnStalls {
            spill_s: s(self.spill.sum_ns),
            spill_max_s: s(self.spill.max_ns),
            spills: self.stalls,
            turn_checkpoint,
            checkpoints: self.checkpoint.count,
            checkpoint_s: s(self.checkpoint.sum_ns),
            checkpoint_max_s: s(self.checkpoint.max_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overruns_add_up_per_side_and_only_the_long_ones_are_stalls() {
        let (mut a, mut b) = (SideStalls::default(), SideStalls::default());
        a.left(2_000);
        a.left(3_000_000);
        b.left(STALL_NS); // exactly the bound: an event in flight, not a stall
        b.checkpoint.record(500_000);
        a.add(&b);
        assert_eq!(a.spill, Durations { count: 3, sum_ns: 4_002_000, max_ns: 3_000_000 });
        assert_eq!((a.stalls, a.checkpoint.count), (1, 1));
        let r = a.report(true);
        assert!((r.spill_s - 0.004002).abs() < 1e-12 && (r.spill_max_s - 0.003).abs() < 1e-12);
        assert_eq!((r.spills, r.turn_checkpoint, r.checkpoints), (1, true, 1));
        assert!((r.checkpoint_s - 0.0005).abs() < 1e-12 && (r.checkpoint_max_s - 0.0005).abs() < 1e-12);
    }
}
