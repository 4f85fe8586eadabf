//! One event of the workload, as every client thread runs it: its kinds prepared on a side's connection (`Hold`),
//! and the drawing of each event (its kind, table and parameters) and its execution (`Draws`), with buffers that
//! every event reuses: nothing is allocated per event (no_alloc.rs).

use rand::distributions::{Distribution, Uniform, WeightedIndex};
use rand::SeedableRng;

use crate::engine::factory::{Connected, Engine};
use crate::engine::{Connection, Value};
use crate::job::{Job, Workload};
use crate::params::{self, CompiledBind, UniformRange};
use crate::rng::WyRand;
use crate::tick;

pub(crate) struct PreparedStatement {
    /// Statement id per table (index = table number - 1).
    pub(crate) ids: Vec<usize>,
    pub(crate) binds: Vec<CompiledBind>,
    repeat: u32,
    /// The point query's case: one uniform integer that nothing reads back, drawn without `fill`'s loop.
    lone: Option<UniformRange>,
}

/// One kind of event of the workload (a mix has several), prepared on one connection.
pub(crate) struct Kind {
    pub(crate) stmts: Vec<PreparedStatement>,
    begin: Option<&'static str>,
    pub(crate) queries: u64,
    /// Per-statement times are taken (a clock read per statement) only for events of more than one statement.
    pub(crate) timed: bool,
    /// One statement, run once, outside a transaction: the event is that execution (`Draws::event`'s short way).
    pub(crate) single: bool,
}

/// Sum and max of one statement's execution times, in ns, and how many executions.
#[derive(Clone, Copy, Default)]
pub(crate) struct StatementTime {
    pub(crate) executions: u64,
    pub(crate) sum_ns: u64,
    pub(crate) max_ns: u64,
}

impl StatementTime {
    pub(crate) fn add(&mut self, o: &StatementTime) {
        self.executions += o.executions;
        self.sum_ns += o.sum_ns;
        self.max_ns = self.max_ns.max(o.max_ns);
    }
}

fn kind_queries(w: &Workload) -> u64 {
    w.statements.iter().map(|s| s.repeat as u64).sum::<u64>() + if w.transaction { 2 } else { 0 }
}

/// The event kinds of a workload: its mix, or itself.
pub(crate) fn kinds_of(w: &Workload) -> Vec<&Workload> {
    if w.mix.is_empty() {
        vec![w]
    } else {
        w.mix.iter().collect()
    }
}

fn prepare_kind(conn: &mut dyn Connection, engine: &Engine, w: &Workload, tables: u32) -> Result<Kind, String> {
    let stmts = w
        .statements
        .iter()
        .map(|s| {
            let ids = (1..=tables)
                .map(|t| conn.prepare(&s.sql.replace("{table}", &t.to_string())))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(PreparedStatement { ids, binds: params::compile(&s.binds)?, repeat: s.repeat, lone: None })
        })
        .collect::<Result<Vec<_>, String>>()
        .map_err(|e| format!("workload {}: {e}", w.name))?;
    let timed = w.statements.len() + if w.transaction { 2 } else { 0 } > 1;
    let single = !w.transaction && w.statements.len() == 1 && w.statements[0].repeat == 1;
    let begin = w.transaction.then(|| engine.begin_sql(w.writes));
    Ok(Kind { stmts, begin, queries: kind_queries(w), timed, single })
}

/// One side as a client thread holds it: a connection of its own and the workload prepared on it.
pub(crate) struct Hold {
    pub(crate) conn: Connected,
    pub(crate) kinds: Vec<Kind>,
}

/// Connects to `engine` and prepares the workload's kinds. `preload`: an in-memory SQLite database lives and dies
/// with its connection, so the job's tables are loaded into it here, before the clock starts (1 thread, check_job).
pub(crate) fn hold(engine: &Engine, specs: &[&Workload], tables: u32, preload: Option<&Job>) -> Result<Hold, String> {
    let mut conn = engine.connect_for_loop()?;
    if let Some(job) = preload {
        let schema = job.schema.as_ref().expect("checked in check_job");
        crate::load::load_into(conn.as_dyn(), engine, job, schema)?;
    }
    let mut kinds =
        specs.iter().map(|w| prepare_kind(conn.as_dyn(), engine, w, tables)).collect::<Result<Vec<_>, _>>()?;
    let read = params::referenced_slots(kinds.iter().flat_map(|k| &k.stmts).flat_map(|s| &s.binds));
    for s in kinds.iter_mut().flat_map(|k| &mut k.stmts) {
        params::drop_unread_slots(&mut s.binds, &read);
        s.lone = params::lone_uniform(&s.binds).copied();
    }
    Ok(Hold { conn, kinds })
}

/// Adds the time since `*last` (a tick) to statement slot `i` and moves `*last` on.
#[inline]
fn lap(times: &mut Option<(&mut [StatementTime], u64)>, i: usize) {
    if let Some((buf, last)) = times {
        let now = tick::now();
        let ns = now.saturating_sub(*last);
        let t = &mut buf[i];
        t.executions += 1;
        t.sum_ns += ns;
        t.max_ns = t.max_ns.max(ns);
        *last = now;
    }
}

/// A thread's drawing of events: its generator, the choices of table and kind, and the buffers that every event's
/// parameters and statement times reuse.
pub(crate) struct Draws {
    weights: WeightedIndex<f64>,
    p: Params,
    /// The last event's statement times (kinds that are `timed`), per slot: BEGIN, statements..., COMMIT.
    pub(crate) scratch: Vec<StatementTime>,
}

/// Whether every event of `holds` is one execution of one kind's one statement on one table: `Draws::event`'s
/// plain case.
pub(crate) fn plain(holds: &[Hold], tables: u32) -> bool {
    tables == 1 && holds.iter().all(|h| h.kinds.len() == 1 && h.kinds[0].single)
}

impl Draws {
    /// Thread `index`'s draws: its own stream of the job's seed, the same whichever loop runs it.
    pub(crate) fn new(specs: &[&Workload], seed: u64, index: u32, tables: u32) -> Result<Draws, String> {
        let weights = WeightedIndex::new(specs.iter().map(|k| k.weight)).map_err(|e| format!("mix weights: {e}"))?;
        let p = Params {
            rng: WyRand::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(index as u64)),
            table_pick: Uniform::new(0usize, tables as usize),
            tables: tables as usize,
            slots: vec![0i64; specs.iter().map(|k| k.slots).max().unwrap_or(0)],
            values: Vec::new(),
        };
        Ok(Draws { weights, p, scratch: Vec::new() })
    }

    /// One event on `hold`, started at `started` (a tick): the kind drawn, and its outcome (rows, or the error).
    /// `PLAIN`: the workload is one kind of one execution on one table (`plain`), known when compiled, so that
    /// the commonest cells' events pay for no choice they do not make.
    #[inline(always)]
    pub(crate) fn event<const PLAIN: bool>(&mut self, hold: &mut Hold, started: u64) -> (usize, Result<u64, String>) {
        let p = &mut self.p;
        let k = if PLAIN || hold.kinds.len() == 1 { 0 } else { self.weights.sample(&mut p.rng) };
        let kind = &hold.kinds[k];
        if PLAIN || kind.single {
            // The common event (a point query, an update): one execution, no loops, no per-statement times.
            let s = &kind.stmts[0];
            let table = if PLAIN { 0 } else { p.table() };
            match s.lone {
                Some(u) if p.values.len() == 1 => p.values[0] = Value::Int(u.sample(&mut p.rng)),
                _ => params::fill(&s.binds, &mut p.rng, &mut p.slots, &mut p.values),
            }
            return (k, hold.conn.execute(s.ids[table], &p.values));
        }
        let times = if kind.timed {
            self.scratch.clear();
            self.scratch.resize(kind.stmts.len() + 2, StatementTime::default());
            Some((self.scratch.as_mut_slice(), started))
        } else {
            None
        };
        (k, p.statements(hold.conn.as_dyn(), kind, times))
    }
}

/// What an execution draws from: the generator, the choice of table, and the buffers of its parameters.
struct Params {
    rng: WyRand,
    table_pick: Uniform<usize>,
    tables: usize,
    slots: Vec<i64>,
    values: Vec<Value>,
}

impl Params {
    #[inline(always)]
    fn table(&mut self) -> usize {
        if self.tables == 1 {
            0
        } else {
            self.table_pick.sample(&mut self.rng)
        }
    }

    /// An event of several executions: its statements (each repetition draws a fresh table and parameters), inside
    /// BEGIN/COMMIT if asked.
    fn statements(
        &mut self,
        conn: &mut dyn Connection,
        kind: &Kind,
        mut times: Option<(&mut [StatementTime], u64)>,
    ) -> Result<u64, String> {
        if let Some(begin) = kind.begin {
            conn.batch(begin)?;
            lap(&mut times, 0);
        }
        let mut rows = 0;
        for (i, s) in kind.stmts.iter().enumerate() {
            for _ in 0..s.repeat {
                let table = self.table();
                params::fill(&s.binds, &mut self.rng, &mut self.slots, &mut self.values);
                match conn.execute(s.ids[table], &self.values) {
                    Ok(r) => rows += r,
                    Err(e) => {
                        if kind.begin.is_some() {
                            let _ = conn.batch("ROLLBACK");
                        }
                        return Err(e);
                    }
                }
                lap(&mut times, i + 1);
            }
        }
        if kind.begin.is_some() {
            if let Err(e) = conn.batch("COMMIT") {
                let _ = conn.batch("ROLLBACK");
                return Err(e);
            }
            lap(&mut times, kind.stmts.len() + 1);
        }
        Ok(rows)
    }
}
