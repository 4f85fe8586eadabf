//! Parameter generators of one statement execution, compiled once per thread from the job's declarations.

use crate::rng::WyRand;
use rand::distributions::Distribution;
use rand::{Rng, RngCore};
use rand_distr::Zipf;

use crate::engine::Value;
use crate::job::{Bind, Gen};

pub enum Draw {
    Uniform(UniformRange),
    /// Every i64 (a uniform range as wide as the type).
    Any,
    Zipf(Zipf<f64>),
    Fixed(i64),
    Ref {
        slot: usize,
        add: i64,
    },
    Digits(u32),
}

pub struct CompiledBind {
    draw: Draw,
    slot: Option<usize>,
}

pub fn compile(binds: &[Bind]) -> Result<Vec<CompiledBind>, String> {
    binds
        .iter()
        .map(|b| {
            let draw = match &b.gen {
                Gen::Uniform { lo, hi } => {
                    if lo > hi {
                        return Err(format!("uniform range is empty: {lo}..{hi}"));
                    }
                    match UniformRange::new(*lo, *hi) {
                        Some(u) => Draw::Uniform(u),
                        None => Draw::Any,
                    }
                }
                Gen::Zipf { n, exponent } => {
                    Draw::Zipf(Zipf::new(*n, *exponent).map_err(|e| format!("zipf(n={n}, exponent={exponent}): {e}"))?)
                }
                Gen::Fixed { value } => Draw::Fixed(*value),
                Gen::Ref { slot, add } => Draw::Ref { slot: *slot, add: *add },
                Gen::Digits { groups } => Draw::Digits(*groups),
            };
            Ok(CompiledBind { draw, slot: b.slot })
        })
        .collect()
}

/// A statement whose only bind is a uniform integer that nothing reads back (the point query's id): its draw, for
/// the hot loop's shortest way (`fill` for it, without the loop over binds, the match and the slot).
pub fn lone_uniform(binds: &[CompiledBind]) -> Option<&UniformRange> {
    match binds {
        [CompiledBind { draw: Draw::Uniform(u), slot: None }] => Some(u),
        _ => None,
    }
}

/// The slots some bind of the workload reads back (`Ref`).
pub fn referenced_slots<'a>(binds: impl Iterator<Item = &'a CompiledBind>) -> Vec<usize> {
    binds.filter_map(|b| if let Draw::Ref { slot, .. } = b.draw { Some(slot) } else { None }).collect()
}

/// Stops storing drawn values no bind reads back (the store is an event's cost for nothing).
pub fn drop_unread_slots(binds: &mut [CompiledBind], read: &[usize]) {
    for b in binds {
        if b.slot.is_some_and(|s| !read.contains(&s)) {
            b.slot = None;
        }
    }
}

/// lo..=hi drawn without bias by Lemire's multiply-and-reject, its rejection threshold worked out once (rand's
/// `Uniform` works it out on every draw): the value is the high half of a 64-bit draw times the range, as rand's,
/// so both give the same values but for the draws either rejects (a chance of range / 2^64).
#[derive(Clone, Copy)]
pub struct UniformRange {
    lo: i64,
    range: u64, // hi - lo + 1
    threshold: u64,
}

impl UniformRange {
    /// None: lo..=hi is every i64 (Draw::Any).
    pub fn new(lo: i64, hi: i64) -> Option<UniformRange> {
        let range = (hi as u64).wrapping_sub(lo as u64).wrapping_add(1);
        (range != 0).then(|| UniformRange { lo, range, threshold: range.wrapping_neg() % range })
    }

    #[inline(always)]
    pub fn sample(&self, rng: &mut WyRand) -> i64 {
        loop {
            let m = rng.next_u64() as u128 * self.range as u128;
            if m as u64 >= self.threshold {
                return self.lo.wrapping_add((m >> 64) as i64);
            }
        }
    }
}

/// Writes sysbench's random string: `groups` runs of 11 digits separated by '-'.
pub fn digits(rng: &mut WyRand, groups: u32, out: &mut String) {
    out.clear();
    for g in 0..groups {
        if g > 0 {
            out.push('-');
        }
        for _ in 0..11 {
            out.push(char::from(b'0' + rng.gen_range(0..10u8)));
        }
    }
}

/// Fills `values` (reusing its string buffers) for one execution; `slots` carries values across statements.
#[inline(always)]
pub fn fill(binds: &[CompiledBind], rng: &mut WyRand, slots: &mut [i64], values: &mut Vec<Value>) {
    if values.len() != binds.len() {
        values.resize(binds.len(), Value::Int(0));
    }
    for (b, v) in binds.iter().zip(values.iter_mut()) {
        let int = match &b.draw {
            Draw::Uniform(u) => Some(u.sample(rng)),
            Draw::Any => Some(rng.next_u64() as i64),
            Draw::Zipf(z) => Some(z.sample(rng) as i64),
            Draw::Fixed(x) => Some(*x),
            Draw::Ref { slot, add } => Some(slots[*slot] + add),
            Draw::Digits(groups) => {
                if !matches!(v, Value::Text(_)) {
                    *v = Value::Text(String::with_capacity(*groups as usize * 12));
                }
                if let Value::Text(s) = v {
                    digits(rng, *groups, s);
                }
                None
            }
        };
        if let Some(x) = int {
            *v = Value::Int(x);
            if let Some(s) = b.slot {
                slots[s] = x;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn bind(gen: Gen, slot: Option<usize>) -> Bind {
        Bind { gen, slot }
    }

    #[test]
    fn digits_have_sysbench_shape() {
        let mut rng = WyRand::seed_from_u64(1);
        let mut s = String::new();
        digits(&mut rng, 10, &mut s);
        assert_eq!(s.len(), 10 * 11 + 9);
        assert!(s.split('-').all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit())));
    }

    #[test]
    fn uniform_stays_in_range_and_ref_follows_slot() {
        let binds = compile(&[bind(Gen::Uniform { lo: 5, hi: 9 }, Some(0)), bind(Gen::Ref { slot: 0, add: 99 }, None)])
            .unwrap();
        let mut rng = WyRand::seed_from_u64(7);
        let mut slots = vec![0i64; 1];
        let mut values = Vec::new();
        for _ in 0..1000 {
            fill(&binds, &mut rng, &mut slots, &mut values);
            let (Value::Int(a), Value::Int(b)) = (&values[0], &values[1]) else { panic!("ints expected") };
            assert!((5..=9).contains(a));
            assert_eq!(*b, a + 99);
        }
    }

    #[test]
    fn uniform_range_draws_what_rands_uniform_draws() {
        use rand::distributions::Uniform;
        for (lo, hi) in [(1i64, 100_000i64), (5, 9), (-3, 3), (0, 0), (i64::MIN, i64::MAX), (1, 1 << 40)] {
            let ours = compile(&[bind(Gen::Uniform { lo, hi }, None)]).unwrap();
            let theirs = Uniform::new_inclusive(lo, hi);
            let (mut a, mut b) = (WyRand::seed_from_u64(9), WyRand::seed_from_u64(9));
            let (mut slots, mut values) = (vec![], vec![]);
            for _ in 0..10_000 {
                fill(&ours, &mut a, &mut slots, &mut values);
                let Value::Int(x) = values[0] else { panic!("an int") };
                assert!((lo..=hi).contains(&x));
                if hi.checked_sub(lo).is_some_and(|d| d < (1 << 40)) {
                    assert_eq!(x, theirs.sample(&mut b), "{lo}..={hi}"); // rejections are ~range/2^64: none here
                }
            }
        }
    }

    #[test]
    fn a_lone_uniform_bind_draws_what_fill_draws() {
        let binds = compile(&[bind(Gen::Uniform { lo: 1, hi: 100_000 }, None)]).unwrap();
        let lone = lone_uniform(&binds).expect("one uniform bind, no slot");
        let (mut a, mut b) = (WyRand::seed_from_u64(5), WyRand::seed_from_u64(5));
        let (mut slots, mut values) = (vec![], vec![]);
        for _ in 0..1000 {
            fill(&binds, &mut a, &mut slots, &mut values);
            assert!(matches!(values[0], Value::Int(x) if x == lone.sample(&mut b)));
        }
        assert!(lone_uniform(&compile(&[bind(Gen::Uniform { lo: 1, hi: 9 }, Some(0))]).unwrap()).is_none());
        assert!(lone_uniform(&compile(&[bind(Gen::Fixed { value: 1 }, None)]).unwrap()).is_none());
    }

    #[test]
    fn unread_slots_are_dropped_and_read_ones_kept() {
        let mut binds =
            compile(&[bind(Gen::Uniform { lo: 1, hi: 9 }, Some(0)), bind(Gen::Uniform { lo: 1, hi: 9 }, Some(1))])
                .unwrap();
        let reader = compile(&[bind(Gen::Ref { slot: 1, add: 0 }, None)]).unwrap();
        let read = referenced_slots(binds.iter().chain(&reader));
        drop_unread_slots(&mut binds, &read);
        assert_eq!(binds.iter().map(|b| b.slot).collect::<Vec<_>>(), vec![None, Some(1)]);
    }

    #[test]
    fn zipf_favours_small_ids() {
        let binds = compile(&[bind(Gen::Zipf { n: 1000, exponent: 0.99 }, None)]).unwrap();
        let mut rng = WyRand::seed_from_u64(3);
        let (mut slots, mut values) = (vec![], vec![]);
        let mut low = 0;
        for _ in 0..10_000 {
            fill(&binds, &mut rng, &mut slots, &mut values);
            let Value::Int(x) = values[0] else { panic!() };
            assert!((1..=1000).contains(&x));
            if x <= 10 {
                low += 1;
            }
        }
        // Uniform would put 1% in 1..=10; Zipf(0.99) puts well over a third there.
        assert!(low > 3000, "{low}");
    }

    #[test]
    fn same_seed_same_values() {
        let binds =
            compile(&[bind(Gen::Uniform { lo: 1, hi: 1_000_000 }, None), bind(Gen::Digits { groups: 2 }, None)])
                .unwrap();
        let draw = |seed| {
            let mut rng = WyRand::seed_from_u64(seed);
            let (mut slots, mut values) = (vec![], vec![]);
            fill(&binds, &mut rng, &mut slots, &mut values);
            format!("{values:?}")
        };
        assert_eq!(draw(11), draw(11));
        assert_ne!(draw(11), draw(12));
    }

    #[test]
    fn bad_declarations_are_refused() {
        assert!(compile(&[bind(Gen::Uniform { lo: 2, hi: 1 }, None)]).is_err());
        assert!(compile(&[bind(Gen::Zipf { n: 10, exponent: -1.0 }, None)]).is_err());
    }
}
