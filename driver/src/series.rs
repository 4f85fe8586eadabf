//! What a cell measured, per interval (sysbench --report-interval, pgbench -P) and as a whole (HdrHistogram).
//!
//! Each client thread counts into its own `Tally` for the interval it is in, and hands it to the shared `Board`
//! when an event ends in a later interval (and at its end, for every interval left): one lock per thread per
//! interval, none per event. The board merges the threads' tallies of an interval and summarises it as soon as
//! every thread has handed its share in, so only the intervals still open stay in memory.

use std::collections::BTreeMap;
use std::sync::Mutex;

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::Serialize;

/// Event latencies in ns from 1 ns to one hour at 3 significant digits; longer events saturate at one hour.
const HIGHEST_NS: u64 = 3_600_000_000_000;

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_NS, 3).expect("static bounds are valid")
}

// HdrHistogram's bucket layout for the bounds above (lowest 1 ns: unit magnitude 0; 3 significant digits: 2048 sub-
// buckets, the lower half of each bucket after the first shared with the one before).
const SUB_BUCKET_HALF_MAGNITUDE: u32 = 10;
const SUB_BUCKET_HALF: usize = 1 << SUB_BUCKET_HALF_MAGNITUDE;
const SUB_BUCKET_MASK: u64 = (2 << SUB_BUCKET_HALF_MAGNITUDE) - 1;

/// The counts index HdrHistogram gives `value` (at most HIGHEST_NS).
#[inline]
fn index_of(value: u64) -> usize {
    let bucket = 64 - (value | SUB_BUCKET_MASK).leading_zeros() - (SUB_BUCKET_HALF_MAGNITUDE + 1);
    let sub = (value >> bucket) as usize;
    ((bucket as usize + 1) << SUB_BUCKET_HALF_MAGNITUDE) + sub - SUB_BUCKET_HALF
}

/// The lowest value of counts index `i`: recorded there, it lands in the same bucket as every value it stands for.
fn lowest_at(i: usize) -> u64 {
    let (bucket, sub) = ((i >> SUB_BUCKET_HALF_MAGNITUDE) as u32, i & (SUB_BUCKET_HALF - 1));
    if bucket == 0 {
        sub as u64
    } else {
        ((sub + SUB_BUCKET_HALF) as u64) << (bucket - 1)
    }
}

/// A thread's event latencies as HdrHistogram's bucket counts, recorded with an index and an increment (the hot
/// loop's share), turned into a `Histogram` when an interval or the cell is summarised. The histogram it gives has
/// the same counts in the same buckets as recording each value into one would, so its percentiles, min, max, mean
/// and V2 encoding are the same (tests below).
pub struct Latencies {
    counts: Vec<u64>,
}

impl Latencies {
    pub fn new() -> Latencies {
        Latencies { counts: vec![0; new_histogram().distinct_values()] }
    }

    /// Records one latency as `Histogram::saturating_record` does: in its bucket while the counts reach it (the
    /// last bucket ends above HIGHEST_NS), else at HIGHEST_NS.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        match self.counts.get_mut(index_of(ns)) {
            Some(c) => *c += 1,
            None => self.counts[index_of(HIGHEST_NS)] += 1,
        }
    }

    pub fn add(&mut self, other: &Latencies) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    pub fn reset(&mut self) {
        self.counts.fill(0);
    }

    pub fn to_histogram(&self) -> Histogram<u64> {
        let mut h = new_histogram();
        for (i, &n) in self.counts.iter().enumerate() {
            if n > 0 {
                h.record_n(lowest_at(i), n).expect("a bucket's lowest value is within the bounds");
            }
        }
        h
    }
}

pub fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// One thread's (or the merged) counts of one interval.
pub struct Tally {
    pub events: u64,
    pub queries: u64,
    pub rows: u64,
    pub errors: u64,
    /// Open loop: events skipped because they were already past latency_limit when due.
    pub skipped: u64,
    /// Open loop: the largest delay between an event's scheduled start and its actual start (queueing).
    pub lag_max_ns: u64,
    pub latency_ns: Latencies,
}

impl Tally {
    pub fn new() -> Tally {
        Tally { events: 0, queries: 0, rows: 0, errors: 0, skipped: 0, lag_max_ns: 0, latency_ns: Latencies::new() }
    }

    pub fn add(&mut self, other: &Tally) -> Result<(), String> {
        self.events += other.events;
        self.queries += other.queries;
        self.rows += other.rows;
        self.errors += other.errors;
        self.skipped += other.skipped;
        self.lag_max_ns = self.lag_max_ns.max(other.lag_max_ns);
        self.latency_ns.add(&other.latency_ns);
        Ok(())
    }

    pub fn reset(&mut self) {
        self.events = 0;
        self.queries = 0;
        self.rows = 0;
        self.errors = 0;
        self.skipped = 0;
        self.lag_max_ns = 0;
        self.latency_ns.reset();
    }
}

/// One interval of the time series, as the result prints it.
#[derive(Debug, Serialize, Clone)]
pub struct Interval {
    /// Seconds from the start of the measured window to the end of this interval.
    pub t_s: f64,
    /// Length of the interval (the last one may be shorter).
    pub duration_s: f64,
    pub events: u64,
    pub queries: u64,
    pub errors: u64,
    pub eps: f64,
    pub qps: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// Open loop only: events skipped past latency_limit, and the largest schedule lag (queueing) in µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lag_max_us: Option<f64>,
}

struct Pending {
    reported: u32,
    tally: Tally,
}

/// Where the threads hand in their intervals.
pub struct Board {
    threads: u32,
    interval_s: f64,
    measured_s: f64,
    open_loop: bool,
    /// Intervals placed one by one (a slices run's side: its own slices, slices.rs): each one's end, in seconds from
    /// the start of the measured window, and its length. Empty: every `interval_s` from the window's start.
    spans: Vec<(f64, f64)>,
    inner: Mutex<(BTreeMap<usize, Pending>, BTreeMap<usize, Interval>)>,
}

impl Board {
    pub fn new(threads: u32, interval_s: f64, measured_s: f64, open_loop: bool) -> Board {
        let inner = Mutex::new((BTreeMap::new(), BTreeMap::new()));
        Board { threads, interval_s, measured_s, open_loop, spans: Vec::new(), inner }
    }

    /// A closed loop's board whose intervals are `spans` (end, length), in order.
    pub fn with_spans(threads: u32, spans: Vec<(f64, f64)>) -> Board {
        let measured_s = spans.last().map_or(0.0, |s| s.0);
        Board { spans, ..Board::new(threads, 1.0, measured_s, false) }
    }

    /// Number of intervals in the measured window (the last one may be partial).
    pub fn count(&self) -> usize {
        if !self.spans.is_empty() {
            return self.spans.len();
        }
        ((self.measured_s / self.interval_s) - 1e-9).ceil().max(1.0) as usize
    }

    /// A thread's share of interval `k`.
    pub fn hand_in(&self, k: usize, tally: &Tally) -> Result<(), String> {
        let mut guard = self.inner.lock().map_err(|_| "interval board poisoned")?;
        let (pending, done) = &mut *guard;
        let entry = pending.entry(k).or_insert_with(|| Pending { reported: 0, tally: Tally::new() });
        entry.tally.add(tally)?;
        entry.reported += 1;
        if entry.reported == self.threads {
            let p = pending.remove(&k).expect("just seen");
            done.insert(k, self.summary(k, &p.tally));
        }
        Ok(())
    }

    fn summary(&self, k: usize, t: &Tally) -> Interval {
        let (end, duration) = match self.spans.get(k) {
            Some(&(end, length)) => (end, length.max(1e-9)),
            None => {
                let start = k as f64 * self.interval_s;
                let end = ((k + 1) as f64 * self.interval_s).min(self.measured_s);
                (end, (end - start).max(1e-9))
            }
        };
        let h = &t.latency_ns.to_histogram();
        let q = |x: f64| if h.is_empty() { 0.0 } else { us(h.value_at_quantile(x)) };
        Interval {
            t_s: end,
            duration_s: duration,
            events: t.events,
            queries: t.queries,
            errors: t.errors,
            eps: t.events as f64 / duration,
            qps: t.queries as f64 / duration,
            p50_us: q(0.50),
            p95_us: q(0.95),
            p99_us: q(0.99),
            max_us: if h.is_empty() { 0.0 } else { us(h.max()) },
            skipped: self.open_loop.then_some(t.skipped),
            lag_max_us: self.open_loop.then_some(us(t.lag_max_ns)),
        }
    }

    /// Every interval, in order, once all threads have handed all of them in.
    pub fn into_intervals(self) -> Vec<Interval> {
        let (_, done) = self.inner.into_inner().unwrap_or_else(|e| e.into_inner());
        done.into_values().collect()
    }
}

/// A thread's place in a plain run's time series: the interval it is counting, handed to the board when time moves
/// on (an event counts in the interval it ends in). Without a board, one interval: the whole window.
pub(crate) struct Clock<'a> {
    board: Option<&'a Board>,
    index: usize,
    count: usize,
    /// Ticks (tick.rs): when the current interval ends, and an interval's length.
    next_boundary: u64,
    step: u64,
    pub(crate) cur: Tally,
    total: Tally,
}

impl Clock<'_> {
    /// Intervals of `step` ticks from `start`, handed in to `board`.
    pub(crate) fn new(board: Option<&Board>, start: u64, step: u64) -> Clock<'_> {
        let count = board.map_or(1, Board::count);
        Clock {
            board,
            index: 0,
            count,
            next_boundary: start.saturating_add(step),
            step,
            cur: Tally::new(),
            total: Tally::new(),
        }
    }

    /// The window opens at `start` after all (a steady state's warm-up has ended).
    pub(crate) fn restart_at(&mut self, start: u64) {
        self.next_boundary = start.saturating_add(self.step);
    }

    /// Hands in every interval that ended before `t`.
    #[inline]
    pub(crate) fn advance_to(&mut self, t: u64) -> Result<(), String> {
        while self.board.is_some() && t >= self.next_boundary && self.index + 1 < self.count {
            self.hand_in()?;
            self.index += 1;
            self.next_boundary += self.step;
        }
        Ok(())
    }

    fn hand_in(&mut self) -> Result<(), String> {
        if let Some(board) = self.board {
            board.hand_in(self.index, &self.cur)?;
        }
        self.total.add(&self.cur)?;
        self.cur.reset();
        Ok(())
    }

    /// The end of the loop: the current interval and every later one (empty) are handed in.
    pub(crate) fn finish(mut self) -> Result<Tally, String> {
        self.hand_in()?;
        while self.board.is_some() && self.index + 1 < self.count {
            self.index += 1;
            self.hand_in()?;
        }
        Ok(self.total)
    }
}

#[derive(Debug, Serialize, Default)]
pub struct Latency {
    pub min_us: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// The percentiles the job asked for.
    pub percentiles: Vec<Percentile>,
}

/// A cell's latency summary from its histogram (all zero when nothing was counted).
pub fn latency(h: &Histogram<u64>, asked: &[f64]) -> Latency {
    if h.is_empty() {
        return Latency::default();
    }
    Latency {
        min_us: us(h.min()),
        mean_us: h.mean() / 1000.0,
        p50_us: us(h.value_at_quantile(0.50)),
        p95_us: us(h.value_at_quantile(0.95)),
        p99_us: us(h.value_at_quantile(0.99)),
        max_us: us(h.max()),
        percentiles: percentiles(h, asked),
    }
}

/// A latency percentile as the result prints it.
#[derive(Debug, Serialize, Clone, Copy)]
pub struct Percentile {
    pub p: f64,
    pub us: f64,
}

pub fn percentiles(h: &Histogram<u64>, asked: &[f64]) -> Vec<Percentile> {
    asked.iter().map(|&p| Percentile { p, us: if h.is_empty() { 0.0 } else { us(h.value_at_percentile(p)) } }).collect()
}

/// The whole histogram in HdrHistogram's V2 compressed encoding, base64: the form HdrHistogram's interval logs
/// hold and its tools (HistogramLogProcessor, hdrhistogram in Python, Go, Java) decode.
#[derive(Debug, Serialize)]
pub struct EncodedHistogram {
    pub format: &'static str,
    pub unit: &'static str,
    pub data: String,
}

pub fn encode(h: &Histogram<u64>) -> Result<EncodedHistogram, String> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut buf).map_err(|e| format!("encoding the histogram: {e}"))?;
    Ok(EncodedHistogram {
        format: "hdrhistogram-v2-deflate-base64",
        unit: "ns",
        data: base64::engine::general_purpose::STANDARD.encode(buf),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_merge_threads_and_close_when_all_handed_in() {
        let board = Board::new(2, 1.0, 2.5, false);
        assert_eq!(board.count(), 3);
        let mut t = Tally::new();
        t.events = 10;
        t.queries = 20;
        t.latency_ns.record(1000);
        for k in 0..3 {
            board.hand_in(k, &t).unwrap();
        }
        board.hand_in(0, &Tally::new()).unwrap();
        board.hand_in(1, &t).unwrap();
        board.hand_in(2, &t).unwrap();
        let iv = board.into_intervals();
        assert_eq!(iv.len(), 3);
        assert_eq!(iv[0].events, 10);
        assert_eq!(iv[1].events, 20);
        assert!((iv[2].duration_s - 0.5).abs() < 1e-9);
        assert!((iv[2].eps - 40.0).abs() < 1e-9);
        assert!((iv[1].p99_us - 1.0).abs() < 0.01);
    }

    #[test]
    fn a_board_of_spans_places_each_interval_where_it_says() {
        let board = Board::with_spans(1, vec![(0.2, 0.1), (0.4, 0.1), (0.45, 0.05)]);
        assert_eq!(board.count(), 3);
        let mut t = Tally::new();
        t.events = 10;
        t.queries = 10;
        for k in 0..3 {
            board.hand_in(k, &t).unwrap();
        }
        let iv = board.into_intervals();
        assert_eq!(iv.iter().map(|i| i.t_s).collect::<Vec<_>>(), vec![0.2, 0.4, 0.45]);
        assert!((iv[2].duration_s - 0.05).abs() < 1e-12);
        assert!((iv[2].eps - 200.0).abs() < 1e-6);
    }

    #[test]
    fn latencies_give_the_histogram_recording_each_value_gives() {
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut direct = new_histogram();
        let mut fast = Latencies::new();
        let top = lowest_at(new_histogram().distinct_values() - 1);
        let mut values = vec![
            0,
            1,
            2,
            1023,
            1024,
            2047,
            2048,
            2049,
            4095,
            4096,
            1_000_000,
            HIGHEST_NS,
            HIGHEST_NS + 1,
            top,
            top * 2,
            u64::MAX,
        ];
        for _ in 0..20_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            values.push(rng >> (rng % 64)); // every magnitude
        }
        for &v in &values {
            direct.saturating_record(v);
            fast.record(v);
            assert_eq!(lowest_at(index_of(v.min(HIGHEST_NS))), direct.lowest_equivalent(v.min(HIGHEST_NS)), "{v}");
        }
        let h = fast.to_histogram();
        assert_eq!(h.len(), direct.len());
        assert_eq!((h.min(), h.max(), h.min_nz()), (direct.min(), direct.max(), direct.min_nz()));
        assert_eq!(h.mean(), direct.mean());
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(h.value_at_quantile(q), direct.value_at_quantile(q));
        }
        assert_eq!(encode(&h).unwrap().data, encode(&direct).unwrap().data);
        let mut twice = Latencies::new();
        twice.add(&fast);
        twice.add(&fast);
        assert_eq!(twice.to_histogram().len(), 2 * direct.len());
        twice.reset();
        assert!(twice.to_histogram().is_empty());
    }

    #[test]
    fn histogram_round_trips() {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let e = encode(&h).unwrap();
        let bytes = base64::engine::general_purpose::STANDARD.decode(e.data).unwrap();
        let back: Histogram<u64> =
            hdrhistogram::serialization::Deserializer::new().deserialize(&mut bytes.as_slice()).unwrap();
        assert_eq!(back.len(), 1000);
        assert_eq!(back.value_at_percentile(99.0), h.value_at_percentile(99.0));
    }
}
