//! Parameter generators of one statement execution, compiled once per thread from the job's declarations.

use rand::distributions::{Distribution, Uniform};
use rand::rngs::SmallRng;
use rand::Rng;
use rand_distr::Zipf;

use crate::engine::Value;
use crate::job::{Bind, Gen};

pub enum Draw {
    Uniform(Uniform<i64>),
    Zipf(Zipf<f64>),
    Fixed(i64),
    Ref { slot: usize, add: i64 },
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
                    Draw::Uniform(Uniform::new_inclusive(*lo, *hi))
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

/// Writes sysbench's random string: `groups` runs of 11 digits separated by '-'.
pub fn digits(rng: &mut SmallRng, groups: u32, out: &mut String) {
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
#[inline]
pub fn fill(binds: &[CompiledBind], rng: &mut SmallRng, slots: &mut [i64], values: &mut Vec<Value>) {
    if values.len() != binds.len() {
        values.resize(binds.len(), Value::Int(0));
    }
    for (b, v) in binds.iter().zip(values.iter_mut()) {
        let int = match &b.draw {
            Draw::Uniform(u) => Some(u.sample(rng)),
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
        let mut rng = SmallRng::seed_from_u64(1);
        let mut s = String::new();
        digits(&mut rng, 10, &mut s);
        assert_eq!(s.len(), 10 * 11 + 9);
        assert!(s.split('-').all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit())));
    }

    #[test]
    fn uniform_stays_in_range_and_ref_follows_slot() {
        let binds = compile(&[bind(Gen::Uniform { lo: 5, hi: 9 }, Some(0)), bind(Gen::Ref { slot: 0, add: 99 }, None)])
            .unwrap();
        let mut rng = SmallRng::seed_from_u64(7);
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
    fn zipf_favours_small_ids() {
        let binds = compile(&[bind(Gen::Zipf { n: 1000, exponent: 0.99 }, None)]).unwrap();
        let mut rng = SmallRng::seed_from_u64(3);
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
            let mut rng = SmallRng::seed_from_u64(seed);
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
