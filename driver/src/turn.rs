//! Whose turn it is: a run cut into slices, one side's each, and a client thread's place among them. A slices run
//! (slices.rs) takes turns every `slice_s`, side 0 first: from the common start, time is cut into rounds of one slice
//! per side, first the warm-up (`warmup_s` of slices per side), then the measured window (`time_s` per side); where
//! `slice_s` does not divide a phase, its last round's slices are shorter, so that every side gets exactly its time.
//! A plain run is one side in one slice: its warm-up, then its measured window (`Slicing::window`).
//!
//! A thread switches to the slice's side at the first event it starts in a new slice, and an event counts for the
//! slice it started in (one that runs over into the next slice takes that much of it: every slice loses and gains so
//! alike).

use crate::series::{Board, Clock};
use crate::side_out::SideOut;
use crate::usage::{self, ThreadCpu};

/// Below this a run would be mostly switching: a switch hands the slice's counts in and reads the thread's CPU.
const MIN_SLICE_S: f64 = 0.001;

/// One phase of the run (the warm-up or the measured window), as time from the common start: `full` rounds of one
/// slice per side, then, where the slice does not divide a side's time, one round of `rest_ns` slices.
#[derive(Clone, Copy, Debug)]
struct Phase {
    start_ns: u64,
    full: u64,
    rest_ns: u64,
}

impl Phase {
    fn new(start_ns: u64, per_side_ns: u64, slice_ns: u64) -> Phase {
        Phase { start_ns, full: per_side_ns / slice_ns, rest_ns: per_side_ns % slice_ns }
    }

    fn rounds(&self) -> u64 {
        self.full + u64::from(self.rest_ns > 0)
    }
}

/// How a run is cut into slices; pure arithmetic (tested below).
#[derive(Clone, Copy, Debug)]
pub struct Slicing {
    sides: u64,
    slice_ns: u64,
    warm: Phase,
    measured: Phase,
}

/// One slice: its side, where it lies in ns from the common start, and (in the measured window) its place among its
/// side's measured slices.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slice {
    pub side: usize,
    pub start_ns: u64,
    pub end_ns: u64,
    pub measured: Option<usize>,
}

fn nanos(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

impl Slicing {
    pub fn new(sides: usize, slice_s: f64, warmup_s: f64, time_s: f64) -> Result<Slicing, String> {
        if !(slice_s.is_finite() && slice_s >= MIN_SLICE_S) {
            return Err(format!("slices: slice_s must be at least {MIN_SLICE_S} s, got {slice_s}"));
        }
        if sides == 0 {
            return Err("slices: the job lists no side".into());
        }
        let (k, slice_ns) = (sides as u64, nanos(slice_s));
        let warm = Phase::new(0, nanos(warmup_s), slice_ns);
        let measured = Phase::new(k * nanos(warmup_s), nanos(time_s), slice_ns);
        if measured.rounds() == 0 {
            return Err(format!("slices: time_s {time_s} is shorter than a nanosecond"));
        }
        Ok(Slicing { sides: k, slice_ns, warm, measured })
    }

    /// Slices in the whole run, the warm-up's and the measured window's.
    pub fn count(&self) -> u64 {
        self.sides * (self.warm.rounds() + self.measured.rounds())
    }

    /// Slice `i` (0 ≤ i < count): side i mod sides.
    pub fn slice(&self, i: u64) -> Slice {
        let warm_slices = self.sides * self.warm.rounds();
        let (phase, j, measured) =
            if i < warm_slices { (&self.warm, i, false) } else { (&self.measured, i - warm_slices, true) };
        let (round, side) = (j / self.sides, j % self.sides);
        let len = if round < phase.full { self.slice_ns } else { phase.rest_ns };
        let start_ns = phase.start_ns + round * self.sides * self.slice_ns + side * len;
        Slice { side: side as usize, start_ns, end_ns: start_ns + len, measured: measured.then_some(round as usize) }
    }

    /// When the measured window opens, in ns from the common start.
    pub fn window_ns(&self) -> u64 {
        self.measured.start_ns
    }

    /// Each side's measured time: its time_s, to the nanosecond.
    pub fn per_side_ns(&self) -> u64 {
        self.measured.full * self.slice_ns + self.measured.rest_ns
    }

    /// Side `side`'s measured slices as its interval series: (end, length), in seconds from the window's opening.
    pub fn spans(&self, side: usize) -> Vec<(f64, f64)> {
        let first = self.sides * self.warm.rounds() + side as u64;
        (0..self.measured.rounds())
            .map(|round| self.slice(first + round * self.sides))
            .map(|s| ((s.end_ns - self.window_ns()) as f64 / 1e9, (s.end_ns - s.start_ns) as f64 / 1e9))
            .collect()
    }

    /// A plain run: one side, its warm-up one slice and its measured window another.
    pub fn window(warm_ns: u64, measured_ns: u64) -> Slicing {
        Slicing {
            sides: 1,
            slice_ns: measured_ns,
            warm: Phase { start_ns: 0, full: 0, rest_ns: warm_ns },
            measured: Phase { start_ns: warm_ns, full: 1, rest_ns: 0 },
        }
    }

    /// When the last slice ends, in ns from the common start.
    pub fn end_ns(&self) -> u64 {
        self.window_ns() + self.sides * self.per_side_ns()
    }
}

/// A thread's place in the slices: the slice it is in and its end (a tick). It starts before the first slice, so
/// that its first event moves it into one.
pub(crate) struct Turn<'a> {
    slicing: Slicing,
    /// A slices run: each measured slice is its side's interval, handed in when the thread leaves it. None: a plain
    /// run, whose intervals are its `Clock`'s.
    boards: Option<&'a [Board]>,
    t0: u64,
    next: u64,
    pub(crate) slice: Slice,
    pub(crate) end: u64,
    /// Events that end after this tick are not counted: a plain closed loop's window end, else never.
    pub(crate) closes: u64,
    bounded: bool,
    cpu_mark: ThreadCpu,
}

impl Turn<'_> {
    /// `t0`: the common start (a tick). `bounded`: an event must end inside the last slice to count.
    pub(crate) fn new(slicing: Slicing, boards: Option<&[Board]>, t0: u64, bounded: bool) -> Turn<'_> {
        let before = Slice { side: 0, start_ns: 0, end_ns: 0, measured: None };
        let mut turn =
            Turn { slicing, boards, t0, next: 0, slice: before, end: 0, closes: 0, bounded, cpu_mark: usage::thread() };
        turn.closes = turn.closing();
        turn
    }

    fn closing(&self) -> u64 {
        if self.bounded {
            self.last()
        } else {
            u64::MAX
        }
    }

    /// The number of the slice the thread is in (0 for the first), the same for every thread of the run.
    pub(crate) fn index(&self) -> u64 {
        self.next.saturating_sub(1)
    }

    /// When the last slice ends (a tick).
    pub(crate) fn last(&self) -> u64 {
        self.t0.saturating_add(self.slicing.end_ns())
    }

    /// When the measured window opens (a tick).
    pub(crate) fn window(&self) -> u64 {
        self.t0.saturating_add(self.slicing.window_ns())
    }

    pub(crate) fn window_ns(&self) -> u64 {
        self.slicing.window_ns()
    }

    /// A plain run's warm-up, open-ended until now (a steady state), ends at `warm_end` (a tick): the thread
    /// leaves it at its next event, as at any slice's end.
    pub(crate) fn settle(&mut self, warm_end: u64) {
        self.slicing = Slicing::window(warm_end.saturating_sub(self.t0), self.slicing.per_side_ns());
        (self.next, self.end, self.closes) = (0, warm_end, self.closing());
    }

    /// At an event's start `now`, at or past the slice's end: the thread's CPU since the last switch counted for
    /// the slice it leaves (the one whose event it was running), every slice ended since handed in (one the thread
    /// spent inside a single event, empty), up to the slice `now` lies in. False: the run has ended.
    #[cold]
    pub(crate) fn move_to(&mut self, now: u64, outs: &mut [SideOut], clock: &mut Clock) -> Result<bool, String> {
        let cpu = usage::thread();
        if self.slice.measured.is_some() {
            outs[self.slice.side].cpu.add(cpu.since(self.cpu_mark));
            // the event that was running when the slice ended ran this far into the next side's slice
            outs[self.slice.side].stalls.left(now.saturating_sub(self.end));
        }
        self.cpu_mark = cpu;
        loop {
            if let (Some(n), Some(boards)) = (self.slice.measured, self.boards) {
                boards[self.slice.side].hand_in(n, &clock.cur)?;
                outs[self.slice.side].total.add(&clock.cur)?;
                clock.cur.reset();
            }
            if self.next == self.slicing.count() {
                return Ok(false);
            }
            self.slice = self.slicing.slice(self.next);
            self.next += 1;
            self.end = self.t0.saturating_add(self.slice.end_ns);
            if now < self.end {
                return Ok(true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &Slice) -> (usize, u64, u64, Option<usize>) {
        (s.side, s.start_ns / 1_000_000, s.end_ns / 1_000_000, s.measured)
    }

    #[test]
    fn slices_take_turns_warm_up_first() {
        let s = Slicing::new(2, 0.1, 0.3, 0.5).unwrap();
        assert_eq!(s.count(), 16);
        assert_eq!(ms(&s.slice(0)), (0, 0, 100, None));
        assert_eq!(ms(&s.slice(5)), (1, 500, 600, None));
        assert_eq!(ms(&s.slice(6)), (0, 600, 700, Some(0)));
        assert_eq!(ms(&s.slice(15)), (1, 1500, 1600, Some(4)));
        assert_eq!(s.window_ns(), 600_000_000);
        assert_eq!(s.per_side_ns(), 500_000_000);
        let spans = s.spans(1);
        assert_eq!(spans.len(), 5);
        assert!((spans[0].0 - 0.2).abs() < 1e-9 && (spans[4].0 - 1.0).abs() < 1e-9);
        assert!(spans.iter().all(|&(_, len)| (len - 0.1).abs() < 1e-9));
    }

    #[test]
    fn a_last_shorter_round_gives_every_side_exactly_its_time() {
        let s = Slicing::new(2, 0.1, 0.0, 0.25).unwrap();
        let all: Vec<_> = (0..s.count()).map(|i| ms(&s.slice(i))).collect();
        assert_eq!(
            all,
            vec![
                (0, 0, 100, Some(0)),
                (1, 100, 200, Some(0)),
                (0, 200, 300, Some(1)),
                (1, 300, 400, Some(1)),
                (0, 400, 450, Some(2)),
                (1, 450, 500, Some(2)),
            ]
        );
        assert!((s.spans(0)[2].1 - 0.05).abs() < 1e-9);
    }

    #[test]
    fn slices_tile_the_run_and_each_side_gets_its_warmup_and_time() {
        for (k, slice_s, warmup_s, time_s) in
            [(1, 0.1, 0.0, 1.0), (2, 0.1, 0.35, 2.0), (3, 0.07, 0.2, 0.5), (4, 1.0, 0.3, 0.2)]
        {
            let s = Slicing::new(k, slice_s, warmup_s, time_s).unwrap();
            let (mut warm, mut measured) = (vec![0u64; k], vec![0u64; k]);
            let mut at = 0;
            for i in 0..s.count() {
                let x = s.slice(i);
                assert_eq!((x.start_ns, x.side), (at, i as usize % k), "slice {i} of {k} sides");
                at = x.end_ns;
                match x.measured {
                    Some(_) => measured[x.side] += x.end_ns - x.start_ns,
                    None => warm[x.side] += x.end_ns - x.start_ns,
                }
            }
            assert!(warm.iter().all(|&w| w == nanos(warmup_s)), "{warm:?}");
            assert!(measured.iter().all(|&m| m == nanos(time_s)), "{measured:?}");
            assert_eq!(at, s.window_ns() + k as u64 * s.per_side_ns());
            let spans: Vec<_> = (0..k).map(|side| s.spans(side).iter().map(|x| x.1).sum::<f64>()).collect();
            assert!(spans.iter().all(|t| (t - time_s).abs() < 1e-9), "{spans:?}");
        }
    }

    #[test]
    fn a_slice_too_short_or_no_side_is_refused() {
        assert!(Slicing::new(2, 0.0001, 0.0, 1.0).unwrap_err().contains("at least 0.001"));
        assert!(Slicing::new(2, f64::NAN, 0.0, 1.0).is_err());
        assert!(Slicing::new(0, 0.1, 0.0, 1.0).unwrap_err().contains("no side"));
    }

    #[test]
    fn a_plain_run_is_one_side_warming_up_then_measured() {
        let s = Slicing::window(300_000_000, 500_000_000);
        assert_eq!(s.count(), 2);
        assert_eq!(ms(&s.slice(0)), (0, 0, 300, None));
        assert_eq!(ms(&s.slice(1)), (0, 300, 800, Some(0)));
        assert_eq!((s.window_ns(), s.per_side_ns(), s.end_ns()), (300_000_000, 500_000_000, 800_000_000));
        let counted = Slicing::window(0, 1_000);
        assert_eq!((counted.count(), counted.slice(0).measured), (1, Some(0)), "no warm-up: measured from the start");
    }

    #[test]
    fn a_turn_moves_through_the_slices_and_ends_after_the_last() {
        let mut clock = Clock::new(None, 0, 1);
        let rules = crate::side_out::Rules { deterministic: false, open: false, limit_ns: None };
        let mut outs = [SideOut::new(&[], rules)];
        let mut turn = Turn::new(Slicing::window(100, 200), None, 1_000, true);
        assert_eq!((turn.closes, turn.last(), turn.window()), (1_300, 1_300, 1_100));
        assert!(turn.move_to(1_000, &mut outs, &mut clock).unwrap());
        assert_eq!((turn.slice.measured, turn.end), (None, 1_100));
        assert!(turn.move_to(1_150, &mut outs, &mut clock).unwrap());
        assert_eq!((turn.slice.measured, turn.end), (Some(0), 1_300));
        assert!(!turn.move_to(1_300, &mut outs, &mut clock).unwrap());
        let mut steady = Turn::new(Slicing::window(u64::MAX / 4, 200), None, 1_000, true);
        assert!(steady.move_to(1_000, &mut outs, &mut clock).unwrap());
        steady.settle(1_050);
        assert_eq!((steady.end, steady.closes, steady.window_ns()), (1_050, 1_250, 50));
        assert!(steady.move_to(1_060, &mut outs, &mut clock).unwrap());
        assert_eq!((steady.slice.measured, steady.end), (Some(0), 1_250));
    }

    #[test]
    fn the_time_an_event_runs_past_its_slice_is_its_sides_spill() {
        let mut clock = Clock::new(None, 0, 1);
        let rules = crate::side_out::Rules { deterministic: false, open: false, limit_ns: None };
        let mut outs = [SideOut::new(&[], rules), SideOut::new(&[], rules)];
        let ms = 1_000_000;
        let mut turn = Turn::new(Slicing::new(2, 0.01, 0.0, 0.03).unwrap(), None, 0, false);
        assert!(turn.move_to(0, &mut outs, &mut clock).unwrap());
        assert_eq!((turn.slice.side, turn.index()), (0, 0));
        // side 0's last event ends 3 ms into side 1's slice: 3 ms of side 0's, a stall
        assert!(turn.move_to(13 * ms, &mut outs, &mut clock).unwrap());
        assert_eq!((turn.slice.side, turn.index()), (1, 1));
        // side 1's ends 2 µs late, then one of side 0's runs over a whole slice of side 1's (slice 3 is skipped)
        assert!(turn.move_to(20 * ms + 2_000, &mut outs, &mut clock).unwrap());
        assert!(turn.move_to(45 * ms, &mut outs, &mut clock).unwrap());
        assert_eq!((turn.slice.side, turn.index()), (0, 4));
        assert_eq!((outs[0].stalls.spill.count, outs[0].stalls.spill.sum_ns, outs[0].stalls.stalls), (2, 18 * ms, 2));
        assert_eq!((outs[1].stalls.spill.count, outs[1].stalls.spill.sum_ns, outs[1].stalls.stalls), (1, 2_000, 0));
    }
}
