//! The per-event bookkeeping of the hot loop allocates nothing (issue 26): a counting allocator, in the test build
//! only, counts this thread's allocations while events are drawn, timed and counted as the loop does, and while the
//! MariaDB client executes statements against a scripted server (and the client loop's events drawn, run on SQLite
//! and counted, in slices.rs's tests).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is passed on to the system allocator unchanged; the count is a thread-local Cell (no
// allocation of its own: a const-initialised thread local).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

pub(crate) fn allocations() -> u64 {
    ALLOCATIONS.with(|n| n.get())
}

#[cfg(test)]
mod tests {
    use crate::rng::WyRand;
    use rand::SeedableRng;

    use super::allocations;
    use crate::engine::Value;
    use crate::job::{Bind, Gen};
    use crate::params;
    use crate::series::Tally;
    use crate::tick;

    #[test]
    fn an_events_bookkeeping_allocates_nothing() {
        let binds = params::compile(&[
            Bind { gen: Gen::Uniform { lo: 1, hi: 100_000 }, slot: Some(0) },
            Bind { gen: Gen::Zipf { n: 1000, exponent: 0.9 }, slot: None },
            Bind { gen: Gen::Ref { slot: 0, add: 1 }, slot: None },
            Bind { gen: Gen::Digits { groups: 10 }, slot: None },
        ])
        .unwrap();
        let mut rng = WyRand::seed_from_u64(1);
        let (mut slots, mut values) = (vec![0i64; 1], Vec::<Value>::new());
        let mut tally = Tally::new();
        params::fill(&binds, &mut rng, &mut slots, &mut values); // the buffers' first use sizes them
        let before = allocations();
        let mut started = tick::now();
        for _ in 0..100_000 {
            params::fill(&binds, &mut rng, &mut slots, &mut values);
            let done = tick::now();
            tally.events += 1;
            tally.queries += 1;
            tally.rows += 1;
            tally.latency_ns.record(done.saturating_sub(started));
            started = done;
        }
        assert_eq!(allocations() - before, 0, "allocations in 100,000 events' bookkeeping");
        assert_eq!(tally.events, 100_000);
        assert_eq!(tally.latency_ns.to_histogram().len(), 100_000);
    }

    /// The MariaDB client's execution (engine/mywire.rs) against a scripted server that answers each query with a
    /// one-row result set: encoding, the write, framing the reply and counting its rows allocate nothing, prepared
    /// (binary protocol) or not (the values inlined into reused SQL text).
    #[test]
    fn a_mariadb_execution_allocates_nothing() {
        use crate::engine::mywire::tests::{binary_rows, replaying};
        use crate::engine::Connection;
        for prepared in [true, false] {
            let (mut c, id) = replaying(prepared, binary_rows(1, 2), 2);
            let values = [Value::Int(12345), Value::Text("73-4459".into())];
            assert_eq!(c.execute(id, &values).unwrap(), 1); // the first use sizes the buffers
            let before = allocations();
            let mut rows = 0;
            for _ in 0..10_000 {
                rows += c.execute(id, &values).unwrap();
            }
            assert_eq!(allocations() - before, 0, "allocations in 10,000 executions, prepared={prepared}");
            assert_eq!(rows, 10_000);
        }
    }
}
